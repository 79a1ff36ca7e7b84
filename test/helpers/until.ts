/** Polls `probe` until it gives a value, or fails naming `what` after `seconds` (a bound, never a timing assertion). */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, seconds = 120, pollMs = 200): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${seconds} s`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
