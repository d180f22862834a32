// A character whose calls wait for each other: `hold` keeps its runtime busy for its whole
// deadline, and `mark` leaves a trace in module state, which outlives conversations, that
// `was_marked` reads.
export const CHARACTER_NAME = "Queue";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/queue.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You queue.", language: "en" };
export const TOOL_TIMEOUT_MS = 1000;

const tool = (name) => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object", properties: {} } },
});

export const TOOLS = [tool("hold"), tool("mark"), tool("was_marked")];

let marked = false;

export class PromptGenerator {
  makeSystemPrompt() {
    return "You queue.";
  }

  handleToolCall(toolName) {
    switch (toolName) {
      case "hold":
        while (true) {}
      case "mark":
        marked = true;
        return "marked";
      default:
        return `marked: ${marked}`;
    }
  }
}
