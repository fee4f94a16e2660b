/** What a synchronous call threw, or undefined when it returned: for asserting on error fields. */
export function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}
