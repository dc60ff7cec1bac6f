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
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail);
    if (!this.truncated) return head + tail.toString('utf8');
    const keep = this.cap - this.half;
    const cut = tail.subarray(Math.max(0, tail.length - keep)).toString('utf8');
    const dropped = this.total - this.headSize - Math.min(keep, tail.length);
    return `${head}\n[… ${dropped} bytes omitted; ${this.total} bytes in total …]\n${cut}`;
  }
}
