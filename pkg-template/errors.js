// Errors of the sextant package: every failure a caller sees is an Error with a stable `code`
// (one of `defaults().error_codes`), whether the core threw it through wasm or JS raised it.

/** An error with a stable `code` (one of `defaults().error_codes`). */
export class SextantError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.name = 'SextantError';
    this.code = code;
    Object.assign(this, details);
  }
}

/** Turns whatever the wasm side threw into an Error with a code. */
export function rethrow(error) {
  if (error instanceof Error) {
    if (!error.code) error.code = 'INTERNAL';
    return error;
  }
  return new SextantError('INTERNAL', String(error));
}

/** Runs a wasm call, turning what it throws into an Error with a code. */
export function call(fn) {
  try {
    return fn();
  } catch (e) {
    throw rethrow(e);
  }
}
