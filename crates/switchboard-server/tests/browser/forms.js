// A character for the browser test of the tool forms: one tool whose schema has every kind
// of field the form generator makes, and which answers with the arguments it received
// (after validation filled in the defaults).
export const CHARACTER_NAME = "Forms";
export const VOICE_SOURCE = { source_type: "file" };
export const INSTRUCTIONS = { instruction_prompt: "You test forms.", language: "en" };

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "configure",
      description: "Echo the arguments",
      parameters: {
        type: "object",
        properties: {
          title: { type: "string", description: "A title" },
          count: { type: "integer", default: 3 },
          ratio: { type: "number" },
          loud: { type: "boolean", default: false },
          mode: { type: "string", enum: ["fast", "slow"], default: "slow" },
          tags: { type: "array", items: { type: "string" }, default: ["a"] },
          place: {
            type: "object",
            properties: { city: { type: "string" }, floor: { type: "integer" } },
            required: ["city"],
          },
        },
        required: ["title", "place"],
      },
    },
  },
];

export class PromptGenerator {
  makeSystemPrompt() {
    return "You test forms.";
  }

  handleToolCall(toolName, toolInput) {
    return JSON.stringify(toolInput);
  }
}
