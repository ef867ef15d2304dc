// PandaStack as tools of the OpenAI Agents SDK (`@openai/agents`): run_python
// and run_shell as function tools.  run_python answers with text and image
// outputs, so a chart reaches the model as an image.
//
//   import { Agent, run } from "@openai/agents";
//   const session = await SandboxSession.create();
//   const agent = new Agent({ name: "analyst", instructions: "Use Python for numbers.",
//     tools: pandastackTools(session) });
//   const result = await run(agent, "Plot y = x^2 and describe it");
//   await session.close();
import { tool } from "@openai/agents";
import { z } from "zod";

import { RUN_PYTHON_DESCRIPTION, RUN_SHELL_DESCRIPTION, SandboxSession } from "./sandbox-tools.mjs";

export { SandboxSession };

/** The tools for a SandboxSession. */
export function pandastackTools(session) {
  return [
    tool({
      name: "run_python",
      description: RUN_PYTHON_DESCRIPTION,
      parameters: z.object({ code: z.string().describe("The Python code of one cell") }),
      execute: async ({ code }) => {
        const out = await session.runPython(code);
        return [
          { type: "text", text: out.error ? `${out.text}\n${out.error}` : out.text },
          ...out.tables.map((html) => ({ type: "text", text: html })),
          ...out.images.map((png) => ({ type: "image", image: { data: png, mediaType: "image/png" } })),
        ];
      },
    }),
    tool({
      name: "run_shell",
      description: RUN_SHELL_DESCRIPTION,
      parameters: z.object({ cmd: z.string().describe("The command line") }),
      execute: async ({ cmd }) => JSON.stringify(await session.runShell(cmd)),
    }),
  ];
}
