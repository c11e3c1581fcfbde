// Items pushed by callbacks (an agent's notifications), read as an async iterable: in order, until
// it is closed (what was pushed before is still read) or fails (the failure is thrown to the reader
// after what was pushed before it).
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private closed = false;
  private error: { value: unknown } | undefined;
  private wake: (() => void) | undefined;

  push(items: readonly T[]): void {
    if (this.closed || items.length === 0) return;
    this.items.push(...items);
    this.notify();
  }

  close(): void {
    this.closed = true;
    this.notify();
  }

  fail(error: unknown): void {
    if (this.closed) return;
    this.error = { value: error };
    this.closed = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      while (this.items.length > 0) yield this.items.shift() as T;
      if (this.closed) {
        if (this.error !== undefined) throw this.error.value;
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}
