import { InvalidArgumentError } from "commander";
import { parseWholeNumber } from "../pipeline/validation.ts";

/**
 * A command-line value parser whose errors are usage errors: commander names the option and its
 * value, and `main` exits 2. Every numeric option is checked where it is parsed, so a 0, -1 or a
 * word never reaches the library and fails there as an internal error.
 */
export function usageParser<T>(parse: (value: string) => T): (value: string) => T {
  return (value: string) => {
    try {
      return parse(value);
    } catch (error) {
      throw new InvalidArgumentError(`${(error as Error).message}.`);
    }
  };
}

/** A whole number in [min, max]. */
export const wholeNumber = (min: number, max?: number) => usageParser((value) => parseWholeNumber(value, min, max));
/** At least 1: runs, jobs, samples, seconds, megabytes. */
export const positiveWholeNumber = wholeNumber(1);
/** A TCP port, 0 for any free one. */
export const portNumber = wholeNumber(0, 65535);
