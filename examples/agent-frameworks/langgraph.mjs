// PandaStack as tools of a LangGraph agent (`@langchain/langgraph` with
// `@langchain/core` tools): run_python and run_shell in a ToolNode, and the
// graph that loops model -> tools -> model until the model stops calling
// tools.  run_python's ToolMessage carries text and image content blocks, so
// a chart reaches the model as an image.
//
//   const session = await SandboxSession.create();
//   const graph = pandastackAgent(chatModel, session);   // any tool-calling chat model
//   const { messages } = await graph.invoke({ messages: [new HumanMessage("Plot y = x^2")] });
//   await session.close();
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

import { RUN_PYTHON_DESCRIPTION, RUN_SHELL_DESCRIPTION, SandboxSession } from "./sandbox-tools.mjs";

export { SandboxSession };

/** The tools for a SandboxSession. */
export function pandastackTools(session) {
  return [
    tool(async ({ code }) => {
      const out = await session.runPython(code);
      return [
        { type: "text", text: out.error ? `${out.text}\n${out.error}` : out.text },
        ...out.tables.map((html) => ({ type: "text", text: html })),
        ...out.images.map((png) => ({ type: "image_url", image_url: { url: `data:image/png;base64,${png}` } })),
      ];
    }, {
      name: "run_python",
      description: RUN_PYTHON_DESCRIPTION,
      schema: z.object({ code: z.string().describe("The Python code of one cell") }),
    }),
    tool(async ({ cmd }) => JSON.stringify(await session.runShell(cmd)), {
      name: "run_shell",
      description: RUN_SHELL_DESCRIPTION,
      schema: z.object({ cmd: z.string().describe("The command line") }),
    }),
  ];
}

/** A compiled graph: the model (with the tools bound) and a ToolNode in a loop. */
export function pandastackAgent(chatModel, session) {
  const tools = pandastackTools(session);
  const model = chatModel.bindTools(tools);
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", new ToolNode(tools))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile();
}
