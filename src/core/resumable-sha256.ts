import { createSHA256, type IHasher } from 'hash-wasm';

// SHA-256 whose running state can be saved and taken up again later, by another request or another
// instance. node:crypto cannot export a hash's state, and a job's upload hash must cover every
// upload of the job in order without reading the stored lines again: after each batch the state is
// kept on the job row, and the next batch (or upload, or resume) continues from it. The hashing is
// hash-wasm's (its hashers save and load their state); this wrapper only gives the state as text.

export class ResumableSha256 {
  private constructor(private readonly hasher: IHasher) {}

  static async create(): Promise<ResumableSha256> {
    const hasher = await createSHA256();
    hasher.init();
    return new ResumableSha256(hasher);
  }

  /** Takes up a state written by `save()`. */
  static async restore(saved: string): Promise<ResumableSha256> {
    const hasher = await createSHA256();
    hasher.load(Buffer.from(saved, 'base64'));
    return new ResumableSha256(hasher);
  }

  /** The running state, as base64 text to keep on the job row. */
  save(): string {
    return Buffer.from(this.hasher.save()).toString('base64');
  }

  update(data: Uint8Array): this {
    this.hasher.update(data);
    return this;
  }

  /** The digest of everything so far; the hash goes on as if it had not been asked. */
  hex(): string {
    const state = this.hasher.save();
    const digest = this.hasher.digest('hex');
    this.hasher.load(state);
    return digest;
  }
}
