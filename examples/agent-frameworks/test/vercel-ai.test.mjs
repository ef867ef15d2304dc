// The Vercel AI SDK recipe with the SDK's own mock model (MockLanguageModelV4
// from ai/test): the model calls run_python, the cell runs in a real sandbox,
// and its text and chart come back into the next model call as the tool's
// result.
import assert from "node:assert/strict";
import { test } from "node:test";

import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV4 } from "ai/test";

import { pandastackTools } from "../vercel-ai.mjs";
import { ANSWER, CELL, assertChart, firstLine, newSession } from "./helpers.mjs";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 10, text: 10, reasoning: 0 },
};

test("a tool call reaches a sandbox and its chart reaches the model", async () => {
  const session = await newSession();
  try {
    const prompts = [];
    const model = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        prompts.push(prompt);
        if (prompts.length === 1) {
          return {
            content: [{ type: "tool-call", toolCallId: "call-1", toolName: "run_python",
              input: JSON.stringify({ code: CELL }) }],
            finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [],
          };
        }
        // the "model" reads the tool's result from its prompt and answers with it
        const result = prompt.find((m) => m.role === "tool").content
          .find((p) => p.type === "tool-result");
        const said = firstLine(result.output.value.find((v) => v.type === "text").text);
        return { content: [{ type: "text", text: `The sum is ${said}.` }],
          finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
      },
    });
    const res = await generateText({ model, tools: pandastackTools(session),
      stopWhen: stepCountIs(3), prompt: "Plot the squares below 10 and sum them." });

    assert.equal(prompts.length, 2);
    assert.equal(res.text, `The sum is ${ANSWER}.`);
    // what the tool answered in the run...
    const out = res.steps[0].toolResults[0].output;
    assert.equal(out.error, null);
    assert.equal(out.images.length, 1);
    assertChart(out.images[0]);
    // ...and what the model was shown: the chart as an image part
    const part = prompts[1].find((m) => m.role === "tool").content[0];
    const image = part.output.value.find((v) => v.type === "file");
    assert.equal(image.mediaType, "image/png");
    assertChart(image.data.data);
  } finally {
    await session.close();
  }
});

test("an exception in the cell reaches the model as the tool's text", async () => {
  const session = await newSession();
  try {
    let seen;
    const model = new MockLanguageModelV4({
      doGenerate: [
        { content: [{ type: "tool-call", toolCallId: "c", toolName: "run_python",
          input: JSON.stringify({ code: "1/0" }) }],
        finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] },
        { content: [{ type: "text", text: "done" }],
          finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] },
      ],
    });
    const res = await generateText({ model, tools: pandastackTools(session),
      stopWhen: stepCountIs(3), prompt: "divide",
      onStepFinish: (step) => { seen ??= step.toolResults[0]?.output; } });
    assert.equal(res.text, "done");
    assert.match(seen.error, /ZeroDivisionError/);
  } finally {
    await session.close();
  }
});
