// A character whose file stem is too long and has a dot: its tools are served shortened.
export const CHARACTER_NAME = "Long";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/long.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You have a long name.", language: "en" };

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "describe_the_weather_in_detail",
      description: "Says what the weather is",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      output_schema: { type: "string", pattern: "^Sunny" },
    },
  },
];

export class PromptGenerator {
  makeSystemPrompt() {
    return "You have a long name.";
  }

  handleToolCall(toolName, toolInput) {
    return `Sunny in ${toolInput.city}`;
  }
}
