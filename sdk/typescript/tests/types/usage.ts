// Type-level check of the public surface as the documents use it: compiled
// with `tsc --noEmit` (npm test); never run. A wrong or missing type fails it.
import {
  Sandbox, CodeContext, Execution, Result, ExecutionError, CommandFailed, PandaStackError,
  AuthenticationError, NotFoundError, TimeoutError, RateLimitError, SandboxError, ConnectionError,
  type ExecResult, type SandboxInfo, type FileEntry, type WriteInfo,
} from "../../dist/index.js";

export async function documents(): Promise<void> {
  const sandbox = await Sandbox.create({ template: "code-interpreter", ttlSeconds: 3600 });
  const result: ExecResult = await sandbox.exec('python -c "print(2 + 2)"', { timeoutSeconds: 30 });
  const out: string = result.stdout;
  const code: number = result.exit_code;
  const ms: number = result.duration_ms;
  void out; void code; void ms;

  const ctx: CodeContext = await sandbox.createCodeContext();
  await ctx.runCode("x = 41");
  const ex: Execution = await ctx.runCode("import matplotlib.pyplot as plt; plt.plot([1,2,3]); plt.show()");
  const png: string | undefined = ex.png;
  const text: string | undefined = ex.text;
  const first: Result | undefined = ex.results[0];
  const html: string | undefined = first?.html;
  const chart: string | undefined = first?.chart;
  const err: ExecutionError | null = ex.error;
  const count: number | null = ex.execution_count;
  void png; void text; void html; void chart; void err; void count;
  await ctx.close();

  const r2: ExecResult = await sandbox.runCode("print(1)", "python");
  const r3: ExecResult = await sandbox.runCode("python --version", { language: "shell", timeoutSeconds: 5 });
  void r2; void r3;

  const w: WriteInfo = await sandbox.filesystem.write("/workspace/data.csv", "a,b\n");
  const s: string = await sandbox.filesystem.read("/workspace/data.csv");
  const b: Uint8Array = await sandbox.filesystem.read("/workspace/data.csv", { format: "bytes" });
  const st: ReadableStream<Uint8Array> = await sandbox.filesystem.read("/workspace/data.csv", { format: "stream" });
  const e: FileEntry = await sandbox.filesystem.stat("/workspace/data.csv");
  await sandbox.filesystem.upload("./data.csv", "/workspace/data.csv");
  await sandbox.filesystem.download("/workspace/result.csv", "./result.csv");
  void w; void s; void b; void st; void e;

  const streamed: ExecResult = await sandbox.execStream("ls", {
    onStdout: (d: string) => void d,
    onStderr: async (d: string) => void d,
  });
  void streamed;
  const info: SandboxInfo = await sandbox.setTtl(7200);
  const all: SandboxInfo[] = await Sandbox.list({ status: "running", metadata: { user: "alice" } });
  const again: Sandbox = await Sandbox.connect(info.id);
  const overTls: Sandbox = await Sandbox.connect(info.id, { apiUrl: "https://h:8443", caFile: "/etc/pandastack/ca.pem" });
  void all; void again; void overTls;
  try {
    await sandbox.exec("exit 3", { check: true });
  } catch (x) {
    if (x instanceof CommandFailed) {
      const failed: ExecResult = x.result;
      void failed;
    } else if (x instanceof PandaStackError) {
      const c: string = x.code;
      const st2: number | undefined = x.status;
      void c; void st2;
    }
  }
  const classes: Array<typeof PandaStackError> = [
    AuthenticationError, NotFoundError, TimeoutError, RateLimitError, SandboxError, ConnectionError,
  ];
  void classes;
  await sandbox.kill();
}

export async function disposal(): Promise<void> {
  await using sandbox = await Sandbox.create({ template: "base" });
  await using ctx = await sandbox.createCodeContext();
  await ctx.runCode("1 + 1");
}
