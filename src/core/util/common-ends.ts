// How much two sequences share at their start and at their end: what a diff, a narrowed edit and
// a minimal `edit` call leave out before they compare the middle.

/** The length of the common prefix (`head`) and of the common suffix after it (`tail`). */
export function commonEnds<T>(a: readonly T[], b: readonly T[]): { head: number; tail: number } {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  return { head, tail };
}
