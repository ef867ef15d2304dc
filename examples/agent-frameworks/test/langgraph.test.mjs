// The LangGraph recipe with @langchain/core's fake chat model, scripted to
// call tools: its first answer calls run_python, the graph's ToolNode runs
// the cell in a real sandbox, and its second answer is made from the
// ToolMessage the graph hands back, chart included.
import assert from "node:assert/strict";
import { test } from "node:test";

import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { FakeStreamingChatModel } from "@langchain/core/utils/testing";

import { pandastackAgent } from "../langgraph.mjs";
import { ANSWER, CELL, assertChart, firstLine, newSession } from "./helpers.mjs";

// FakeStreamingChatModel answers from a fixed list; this one answers from a
// script of the conversation so far, and keeps itself when tools are bound.
class ScriptedChatModel extends FakeStreamingChatModel {
  constructor(script) {
    super({ sleep: 0 });
    this.script = script;
    this.seen = [];
  }

  bindTools(tools) {
    this.bound = tools.map((t) => t.name);
    return this;
  }

  async _generate(messages) {
    this.seen.push(messages);
    return { generations: [{ text: "", message: this.script(messages) }] };
  }

  async *_streamResponseChunks() {
    throw new Error("this test does not stream");
  }
}

function toolImages(msg) {
  return (Array.isArray(msg.content) ? msg.content : [])
    .filter((b) => b.type === "image_url")
    .map((b) => b.image_url.url.replace(/^data:image\/png;base64,/, ""));
}

test("a tool call reaches a sandbox and its chart reaches the model", async () => {
  const session = await newSession();
  try {
    const model = new ScriptedChatModel((messages) => {
      const last = messages.at(-1);
      if (!(last instanceof ToolMessage)) {
        return new AIMessage({ content: "", tool_calls: [
          { id: "call_1", name: "run_python", args: { code: CELL }, type: "tool_call" }] });
      }
      const said = firstLine(last.content.find((b) => b.type === "text").text);
      return new AIMessage(`The sum is ${said}.`);
    });
    const graph = pandastackAgent(model, session);
    const { messages } = await graph.invoke({
      messages: [new HumanMessage("Plot the squares below 10 and sum them.")] });

    assert.deepEqual(model.bound, ["run_python", "run_shell"]);
    assert.equal(model.seen.length, 2);
    assert.equal(messages.at(-1).content, `The sum is ${ANSWER}.`);
    // the ToolMessage the model saw on its second turn holds the chart
    const tool = model.seen[1].at(-1);
    assert.ok(tool instanceof ToolMessage);
    const images = toolImages(tool);
    assert.equal(images.length, 1);
    assertChart(images[0]);
  } finally {
    await session.close();
  }
});
