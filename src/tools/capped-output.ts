// Collects a stream's bytes up to a cap while the stream keeps flowing. It keeps the head and the tail:
// command output usually puts the error or the coding CLI's final answer at the end.
export class CappedOutput {
  private readonly half: number;
  private head: Buffer[] = [];
  private headSize = 0;
  private tail: Buffer[] = [];
  private tailSize = 0;
  total = 0;

  constructor(readonly cap: number) {
    this.half = Math.floor(cap / 2);
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headSize < this.half) {
      const take = Math.min(chunk.length, this.half - this.headSize);
      this.head.push(chunk.subarray(0, take));
      this.headSize += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    this.tail.push(chunk);
    this.tailSize += chunk.length;
    // Drop whole chunks from the front while the rest still fills the tail half.
    while (this.tail.length > 1 && this.tailSize - this.tail[0]!.length >= this.cap - this.half) {
      this.tailSize -= this.tail.shift()!.length;
    }
  }

  get truncated(): boolean {
    return this.total > this.cap;
  }

  toString(): string {
    // Decoded as one: the head's 'half' bytes may end inside a UTF-8 character that the tail completes.
    if (!this.truncated) return Buffer.concat([...this.head, ...this.tail]).toString('utf8');
    const head = Buffer.concat(this.head);
    const tail = Buffer.concat(this.tail);
    const keep = this.cap - this.half;
    // Both cuts on character boundaries, so no half character shows up as U+FFFD beside the marker.
    const headBytes = head.subarray(0, utf8End(head));
    const kept = tail.subarray(Math.max(0, tail.length - keep));
    const tailBytes = kept.subarray(utf8Start(kept));
    const dropped = this.total - headBytes.length - tailBytes.length;
    return `${headBytes.toString('utf8')}\n[… ${dropped} bytes omitted; ${this.total} bytes in total …]\n${tailBytes.toString('utf8')}`;
  }
}

const isContinuation = (byte: number) => (byte & 0xc0) === 0x80;

/** Where `buf` ends once a last character cut short is left out. */
function utf8End(buf: Buffer): number {
  let i = buf.length - 1;
  // Back over at most 3 continuation bytes to the start byte of the last character.
  while (i > 0 && i > buf.length - 4 && isContinuation(buf[i]!)) i--;
  const start = buf[i];
  if (start === undefined || start < 0xc0) return buf.length; // ASCII or invalid: nothing to trim
  const need = start >= 0xf0 ? 4 : start >= 0xe0 ? 3 : 2;
  return buf.length - i >= need ? buf.length : i;
}

/** Where the first whole character of `buf` starts (past continuation bytes of one cut off in front). */
function utf8Start(buf: Buffer): number {
  let i = 0;
  while (i < 3 && i < buf.length && isContinuation(buf[i]!)) i++;
  return i;
}
