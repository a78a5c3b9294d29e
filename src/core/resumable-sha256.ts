// SHA-256 whose running state can be saved and taken up again later, by another request or another
// instance. node:crypto cannot export a hash's state, and a job's upload hash must cover every
// upload of the job in order without reading the stored lines again: after each batch the state is
// kept on the job row, and the next batch (or upload, or resume) continues from it (FIPS 180-4).

const K = Uint32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const INITIAL = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const STATE_BYTES = 32 + 8;
const W = new Uint32Array(64);

export class ResumableSha256 {
  private readonly h: Uint32Array;
  private readonly block = new Uint8Array(64);
  private filled = 0;
  private length = 0;

  private constructor(h: Uint32Array) {
    this.h = h;
  }

  static create(): ResumableSha256 {
    return new ResumableSha256(Uint32Array.from(INITIAL));
  }

  /** Takes up a state written by `save()`. */
  static restore(saved: string): ResumableSha256 {
    const bytes = Buffer.from(saved, 'base64');
    if (bytes.length < STATE_BYTES || bytes.length >= STATE_BYTES + 64) throw new Error('not a saved SHA-256 state');
    const h = new Uint32Array(8);
    for (let i = 0; i < 8; i += 1) h[i] = bytes.readUInt32BE(i * 4);
    const hash = new ResumableSha256(h);
    hash.length = Number(bytes.readBigUInt64BE(32));
    hash.filled = bytes.length - STATE_BYTES;
    hash.block.set(bytes.subarray(STATE_BYTES));
    if (hash.filled !== hash.length % 64) throw new Error('not a saved SHA-256 state');
    return hash;
  }

  /** The state as text: the chaining value, the bytes hashed so far, and the unfinished block. */
  save(): string {
    const out = Buffer.alloc(STATE_BYTES + this.filled);
    for (let i = 0; i < 8; i += 1) out.writeUInt32BE(this.h[i]!, i * 4);
    out.writeBigUInt64BE(BigInt(this.length), 32);
    out.set(this.block.subarray(0, this.filled), STATE_BYTES);
    return out.toString('base64');
  }

  update(data: Uint8Array): this {
    this.length += data.length;
    let at = 0;
    if (this.filled > 0) {
      const take = Math.min(64 - this.filled, data.length);
      this.block.set(data.subarray(0, take), this.filled);
      this.filled += take;
      at = take;
      if (this.filled < 64) return this;
      compress(this.h, this.block, 0);
      this.filled = 0;
    }
    for (; at + 64 <= data.length; at += 64) compress(this.h, data, at);
    this.block.set(data.subarray(at), 0);
    this.filled = data.length - at;
    return this;
  }

  /** The digest (hex) of what was hashed so far; the state itself is left as it was. */
  hex(): string {
    const copy = ResumableSha256.restore(this.save());
    const bits = BigInt(copy.length) * 8n;
    const pad = Buffer.alloc(((copy.filled < 56 ? 56 : 120) - copy.filled) + 8);
    pad[0] = 0x80;
    pad.writeBigUInt64BE(bits, pad.length - 8);
    copy.update(pad);
    return Array.from(copy.h, (word) => word.toString(16).padStart(8, '0')).join('');
  }
}

function compress(h: Uint32Array, data: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i += 1) {
    const j = at + i * 4;
    W[i] = ((data[j]! << 24) | (data[j + 1]! << 16) | (data[j + 2]! << 8) | data[j + 3]!) >>> 0;
  }
  for (let i = 16; i < 64; i += 1) {
    const a = W[i - 15]!;
    const b = W[i - 2]!;
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    W[i] = (W[i - 16]! + s0 + W[i - 7]! + s1) | 0;
  }
  let a = h[0]!; let b = h[1]!; let c = h[2]!; let d = h[3]!;
  let e = h[4]!; let f = h[5]!; let g = h[6]!; let hh = h[7]!;
  for (let i = 0; i < 64; i += 1) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (hh + s1 + ((e & f) ^ (~e & g)) + K[i]! + W[i]!) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  h[0] = (h[0]! + a) >>> 0; h[1] = (h[1]! + b) >>> 0; h[2] = (h[2]! + c) >>> 0; h[3] = (h[3]! + d) >>> 0;
  h[4] = (h[4]! + e) >>> 0; h[5] = (h[5]! + f) >>> 0; h[6] = (h[6]! + g) >>> 0; h[7] = (h[7]! + hh) >>> 0;
}
