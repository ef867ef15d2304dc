/**
 * The result of a command or a one-shot run, on its own: the errors module
 * (CommandFailed carries one) and the models module (which parses it and
 * throws those errors) both use it, and neither imports the other for it.
 */

/** The result of `exec`, `execStream` and `Sandbox.runCode`. */
export interface ExecResult {
  stdout: string;
  stderr: string;
  /** The command's exit code; 128 + N when signal N killed it. */
  exit_code: number;
  /** Run time measured in the guest, milliseconds. */
  duration_ms: number;
  /** True when the command hit its `timeoutSeconds`. */
  timed_out: boolean;
  /** The signal that killed the command, or null. */
  signal: number | null;
  /** True when stdout passed the daemon's output cap and was cut (with a marker). */
  stdout_truncated: boolean;
  stderr_truncated: boolean;
}
