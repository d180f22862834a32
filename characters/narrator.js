// The narrator: tells the story and logs the events that matter to the developer's terminal.
export const CHARACTER_NAME = "Narrator";

export const VOICE_SOURCE = {
  source_type: "file",
  path_on_server: "voices/narrator.wav",
  description: "A calm, warm narrator voice",
};

export const INSTRUCTIONS = {
  instruction_prompt:
    "You are the narrator of an interactive adventure. Describe scenes vividly in two or three sentences, " +
    "then ask the listener what they do next.",
  language: "en",
};

export const METADATA = { good: true, comment: "Narrator with a logging tool" };

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "log_story_event",
      description: "Log an important narrative event to the terminal for the developer to see",
      parameters: {
        type: "object",
        properties: {
          event: { type: "string", description: "The story event to log" },
          importance: {
            type: "string",
            enum: ["low", "medium", "high"],
            default: "medium",
            description: "Importance level of this event",
          },
        },
        required: ["event"],
      },
    },
  },
];

export class PromptGenerator {
  constructor(instructions) {
    this.instructions = instructions;
  }

  makeSystemPrompt() {
    return (
      `${this.instructions.instruction_prompt}\n\n` +
      "When something important happens in the story (a discovery, a death, a twist), " +
      "call log_story_event with a one-line summary. Keep narrating after the call. " +
      `Speak ${this.instructions.language === "en" ? "English" : this.instructions.language}.`
    );
  }

  handleToolCall(toolName, toolInput) {
    if (toolName === "log_story_event") {
      const importance = (toolInput.importance ?? "medium").toUpperCase();
      console.log(`[NARRATOR EVENT] [${importance}] ${toolInput.event}`);
      return `Logged story event: ${toolInput.event}`;
    }
    throw new Error(`Unknown tool ${toolName}`);
  }
}
