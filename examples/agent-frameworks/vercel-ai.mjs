// PandaStack as tools of the Vercel AI SDK (`ai`): run_python and run_shell,
// for generateText / streamText.  run_python's charts go back to the model as
// image parts (toModelOutput), not as base64 text.
//
//   import { generateText, stepCountIs } from "ai";
//   const session = await SandboxSession.create();
//   const { text } = await generateText({ model, tools: pandastackTools(session),
//     stopWhen: stepCountIs(5), prompt: "Plot y = x^2 and describe it" });
//   await session.close();
import { tool } from "ai";
import { z } from "zod";

import { RUN_PYTHON_DESCRIPTION, RUN_SHELL_DESCRIPTION, SandboxSession } from "./sandbox-tools.mjs";

export { SandboxSession };

/** The tool set for a SandboxSession. */
export function pandastackTools(session) {
  return {
    run_python: tool({
      description: RUN_PYTHON_DESCRIPTION,
      inputSchema: z.object({ code: z.string().describe("The Python code of one cell") }),
      execute: async ({ code }) => session.runPython(code),
      toModelOutput: ({ output }) => ({
        type: "content",
        value: [
          { type: "text", text: output.error ? `${output.text}\n${output.error}` : output.text },
          ...output.tables.map((html) => ({ type: "text", text: html })),
          ...output.images.map((png) => ({
            type: "file", data: { type: "data", data: png }, mediaType: "image/png",
          })),
        ],
      }),
    }),
    run_shell: tool({
      description: RUN_SHELL_DESCRIPTION,
      inputSchema: z.object({ cmd: z.string().describe("The command line") }),
      execute: async ({ cmd }) => session.runShell(cmd),
    }),
  };
}
