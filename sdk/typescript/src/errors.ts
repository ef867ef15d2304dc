/**
 * Typed errors of the PandaStack SDK.
 *
 * Every error the SDK throws is a `PandaStackError`. Errors that come from the
 * API carry its `{"error": {"code", "message"}}` body and the HTTP status
 * (docs/api.md, "Errors"); errors found on the client side (no connection, a
 * client deadline, a bad response) carry a client code and `status` undefined.
 *
 * Mapping of API answers (the same in the Python SDK):
 *   401              -> AuthenticationError
 *   404              -> NotFoundError
 *   408, 504         -> TimeoutError   (also the client-side deadline, code "client_timeout")
 *   429              -> RateLimitError
 *   other 4xx / 5xx  -> SandboxError
 * Connection failures (refused, reset, DNS) -> ConnectionError, code "connection_failed".
 */

import { API_ERROR_STATUS } from "./api_errors.js";
import type { ExecResult } from "./exec_result.js";

/** Fields shared by every SDK error. */
export interface PandaStackErrorInit {
  /** The API's error code (e.g. "sandbox_not_found") or a client code (e.g. "client_timeout"). */
  code: string;
  /** The HTTP status of the answer; undefined when no answer was received. */
  status?: number | undefined;
  /** The underlying error, if any (a network error, a JSON parse error). */
  cause?: unknown;
}

/** The base of every error this SDK throws. */
export class PandaStackError extends Error {
  /** The API's error code, or a client code such as "client_timeout" or "connection_failed". */
  readonly code: string;
  /** HTTP status of the API answer; undefined for errors found on the client side. */
  readonly status: number | undefined;

  constructor(message: string, init: PandaStackErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
  }
}

/** 401: no API key, or a malformed or unknown one (code "unauthorized" or "missing_api_key"). */
export class AuthenticationError extends PandaStackError {}

/** 404: no such sandbox, file, template, code context or route. */
export class NotFoundError extends PandaStackError {}

/** 408/504 from the API, or the client's own deadline passed (code "client_timeout"). */
export class TimeoutError extends PandaStackError {}

/** 429: the team reached its sandbox limit ("too_many_sandboxes"). */
export class RateLimitError extends PandaStackError {}

/** Any other 4xx/5xx answer: bad request, conflict, body too large, daemon or guest failure. */
export class SandboxError extends PandaStackError {}

/** The daemon could not be reached, or the connection broke before an answer arrived. */
export class ConnectionError extends PandaStackError {}

/**
 * Thrown by `exec(..., { check: true })` and `execStream(..., { check: true })` when the
 * command ended with a non-zero exit code. `result` is the full result.
 */
export class CommandFailed extends PandaStackError {
  /** The result of the failed command (stdout, stderr, exit_code, duration_ms, ...). */
  readonly result: ExecResult;

  constructor(result: ExecResult) {
    super(`command exited with code ${result.exit_code}`, { code: "command_failed" });
    this.result = result;
  }
}

/**
 * Returns the error class for an HTTP status and API code, following the
 * table at the top of this file. `status` may be undefined for errors that
 * arrive inside an event stream; then the status the API answers that code
 * with decides (its table, docs/api.md "Errors": e.g. "sandbox_not_found" is
 * 404, NotFoundError); a code the API does not define gives SandboxError.
 */
export function errorClassFor(
  status: number | undefined,
  code: string,
): new (message: string, init: PandaStackErrorInit) => PandaStackError {
  const s = status ?? (Object.hasOwn(API_ERROR_STATUS, code) ? API_ERROR_STATUS[code] : undefined);
  if (s === 401) return AuthenticationError;
  if (s === 404) return NotFoundError;
  if (s === 408 || s === 504) return TimeoutError;
  if (s === 429) return RateLimitError;
  return SandboxError;
}

/** Builds the typed error for an API error (status and `{"error": {code, message}}`). */
export function apiError(status: number | undefined, code: string, message: string): PandaStackError {
  const Cls = errorClassFor(status, code);
  return new Cls(message, { code, status });
}
