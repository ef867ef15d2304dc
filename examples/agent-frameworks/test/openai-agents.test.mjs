// The OpenAI Agents SDK recipe with a fake model implementing the SDK's Model
// interface (getResponse / getStreamedResponse): its first response calls
// run_python, the cell runs in a real sandbox, and its second response is
// made from the function call result the runner hands back, chart included.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Agent, run, setTracingDisabled, Usage } from "@openai/agents";

import { pandastackTools } from "../openai-agents.mjs";
import { ANSWER, CELL, assertChart, firstLine, newSession } from "./helpers.mjs";

setTracingDisabled(true); // no trace export: no network, no key

class ScriptedModel {
  constructor() {
    this.requests = [];
  }

  async getResponse(request) {
    this.requests.push(request);
    if (this.requests.length === 1) {
      return { usage: new Usage(), responseId: "resp_1", output: [{
        type: "function_call", id: "fc_1", callId: "call_1", name: "run_python", status: "completed",
        arguments: JSON.stringify({ code: CELL }),
      }] };
    }
    // the runner hands a tool's text and image outputs back as input_text and
    // input_image items of the function call result
    const result = request.input.find((i) => i.type === "function_call_result");
    const said = firstLine(result.output.find((p) => p.type === "input_text").text);
    return { usage: new Usage(), responseId: "resp_2", output: [{
      type: "message", id: "msg_1", role: "assistant", status: "completed",
      content: [{ type: "output_text", text: `The sum is ${said}.` }],
    }] };
  }

  async *getStreamedResponse() {
    throw new Error("this test does not stream");
  }
}

test("a tool call reaches a sandbox and its chart reaches the model", async () => {
  const session = await newSession();
  try {
    const model = new ScriptedModel();
    const agent = new Agent({ name: "analyst", instructions: "Use Python for numbers.",
      tools: pandastackTools(session), model });
    const result = await run(agent, "Plot the squares below 10 and sum them.");

    assert.equal(model.requests.length, 2);
    assert.equal(result.finalOutput, `The sum is ${ANSWER}.`);
    // the function call result the runner gave the model holds the chart
    const back = model.requests[1].input.find((i) => i.type === "function_call_result");
    const image = back.output.find((p) => p.type === "input_image");
    assert.match(image.image, /^data:image\/png;base64,/);
    assertChart(image.image.slice("data:image/png;base64,".length));
  } finally {
    await session.close();
  }
});
