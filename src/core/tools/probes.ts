// Facts about the machine that do not change while the host runs (which search programs are
// installed), found once per owner. The host keeps one `Probes` for its lifetime and gives it to
// the built-in tools it registers (`createBuiltinTools`); a tool made without one probes again on
// every call.

export class Probes {
  readonly #answers = new Map<string, Promise<unknown>>();

  /** The answer of `probe`, asked the first time `key` is (later calls share that answer). */
  once<T>(key: string, probe: () => Promise<T>): Promise<T> {
    let answer = this.#answers.get(key) as Promise<T> | undefined;
    if (answer === undefined) {
      answer = probe();
      this.#answers.set(key, answer);
    }
    return answer;
  }
}

/** `probe()` through `probes` when there is one, else afresh. */
export function probeOnce<T>(
  probes: Probes | undefined,
  key: string,
  probe: () => Promise<T>,
): Promise<T> {
  return probes === undefined ? probe() : probes.once(key, probe);
}
