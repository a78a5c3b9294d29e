import { randomInt } from 'node:crypto';

// Service account numbers (D6): `A-` and 8 characters of 0-9A-Z from a CSPRNG, so they cannot be
// guessed from one another. 36^8 ≈ 2.8·10^12 numbers: the unique index catches the rare repeat and
// the caller draws again; accounts are never deleted, so a number is never reused.
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

export function newAccountNumber(): string {
  let number = 'A-';
  for (let i = 0; i < 8; i += 1) number += ALPHABET[randomInt(ALPHABET.length)];
  return number;
}
