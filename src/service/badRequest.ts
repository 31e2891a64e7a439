/**
 * A request the service refuses: answered `{"error": message}` with `status` (400 unless said). Its own module,
 * below params.ts and requestLimits.ts, which both throw it.
 */
export class BadRequest extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}
