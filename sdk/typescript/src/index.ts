/**
 * @pandastack/sdk: the TypeScript SDK of PandaStack (docs/sdk-typescript.md).
 *
 *   import { Sandbox } from "@pandastack/sdk";
 *   const sandbox = await Sandbox.create({ template: "code-interpreter", ttlSeconds: 3600 });
 *   const result = await sandbox.exec("python -c 'print(2 ** 10)'");
 *   await sandbox.kill();
 *
 * Configuration: options, else PANDASTACK_API_KEY / PANDASTACK_API_URL.
 */

export { Sandbox, DEFAULT_TEMPLATE } from "./sandbox.js";
export type {
  SandboxCreateOptions,
  SandboxListOptions,
  ExecOptions,
  ExecStreamOptions,
  SandboxRunCodeOptions,
  BackgroundExecOptions,
  PortUrlOptions,
  ForkOptions,
  SnapshotListOptions,
} from "./sandbox.js";
export { Command } from "./command.js";
export type { CommandInfo, CommandOutput, CommandOutputOptions, CommandSignal } from "./command.js";
export { CodeContext } from "./code_context.js";
export type { CodeContextOptions, RunCodeOptions } from "./code_context.js";
export { Execution, Result, ExecutionError } from "./execution.js";
export { Filesystem } from "./filesystem.js";
export type { WriteData, ReadOptions, FileCallOptions } from "./filesystem.js";
export type {
  SandboxInfo,
  SandboxStatus,
  SnapshotInfo,
  ExecResult,
  FileEntry,
  WriteInfo,
  DirListing,
  CodeContextInfo,
} from "./models.js";
export {
  PandaStackError,
  AuthenticationError,
  NotFoundError,
  TimeoutError,
  RateLimitError,
  SandboxError,
  ConnectionError,
  CommandFailed,
} from "./errors.js";
export type { PandaStackErrorInit } from "./errors.js";
export { DEFAULT_API_URL } from "./config.js";
export type { ConnectionOptions } from "./config.js";
export { SDK_VERSION } from "./version.js";
