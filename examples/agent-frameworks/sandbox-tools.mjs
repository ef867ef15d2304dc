// What the recipes' tools do, written once on @pandastack/sdk: one sandbox per
// agent run, a persistent Python context in it (made on first use, so
// variables survive between tool calls as in a notebook), and shell commands.
// Each framework's file (vercel-ai.mjs, openai-agents.mjs, langgraph.mjs) only
// wraps these two calls in its own tool idiom.
import { Sandbox } from "@pandastack/sdk";

export const RUN_PYTHON_DESCRIPTION =
  "Run Python in a sandbox (a persistent Jupyter kernel with numpy, pandas and matplotlib). " +
  "Returns what the code printed, the last expression's value, charts as PNG images and " +
  "tables as HTML; an exception comes back with its traceback.";
export const RUN_SHELL_DESCRIPTION =
  "Run a shell command (/bin/sh -c) in the sandbox and return its stdout, stderr and exit code.";

export class SandboxSession {
  /**
   * @param {import("@pandastack/sdk").Sandbox} sandbox
   * @param {number} [timeoutSeconds] each cell's and command's limit (default: the daemon's, 60)
   */
  constructor(sandbox, timeoutSeconds) {
    this.sandbox = sandbox;
    this.context = null;
    this.timeoutSeconds = timeoutSeconds;
  }

  /**
   * A new sandbox: the options of Sandbox.create (template, ttlSeconds, apiKey, ...)
   * and timeoutSeconds, each tool call's limit.
   */
  static async create({ timeoutSeconds, ...options } = {}) {
    const sandbox = await Sandbox.create({ template: "code-interpreter", ...options });
    return new SandboxSession(sandbox, timeoutSeconds);
  }

  /**
   * Run one cell.  Returns {text, images, tables, error}: text is stdout,
   * each result's text and stderr; images are base64 PNGs; tables are HTML;
   * error is "Name: value" and the traceback, or null.
   */
  async runPython(code, { timeoutSeconds = this.timeoutSeconds } = {}) {
    this.context ??= await this.sandbox.createCodeContext();
    const ex = await this.context.runCode(code, { timeoutSeconds });
    const text = [ex.stdout, ...ex.results.map((r) => r.text ?? ""), ex.stderr]
      .filter((s) => s && s.length > 0).join("\n");
    return {
      text,
      images: ex.results.map((r) => r.png).filter(Boolean),
      tables: ex.results.map((r) => r.html).filter(Boolean),
      error: ex.error ? ex.error.toString() : null,
    };
  }

  /** Run a command.  Returns {stdout, stderr, exit_code}. */
  async runShell(cmd, { timeoutSeconds = this.timeoutSeconds } = {}) {
    const r = await this.sandbox.exec(cmd, { timeoutSeconds });
    return { stdout: r.stdout, stderr: r.stderr, exit_code: r.exit_code };
  }

  /** Stop and delete the sandbox. */
  async close() {
    await this.sandbox.kill();
  }
}
