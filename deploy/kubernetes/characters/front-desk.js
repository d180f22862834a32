// The front desk: answers visitors and looks up the opening hours. An example of the
// characters a deployment serves from its own ConfigMap (kustomization.yaml), beside or
// instead of those shipped in the image.
export const CHARACTER_NAME = "Front desk";

export const VOICE_SOURCE = {
  source_type: "file",
  path_on_server: "voices/front-desk.wav",
  description: "A clear, welcoming receptionist voice",
};

export const INSTRUCTIONS = {
  instruction_prompt:
    "You are the front desk of a small library. Greet visitors, answer in one or two sentences, " +
    "and look up the opening hours with opening_hours before you state them.",
  language: "en",
};

export const METADATA = { good: true, comment: "Example character of the Kubernetes kit" };

const HOURS = {
  monday: "9:00 to 18:00",
  tuesday: "9:00 to 18:00",
  wednesday: "9:00 to 20:00",
  thursday: "9:00 to 18:00",
  friday: "9:00 to 17:00",
  saturday: "10:00 to 14:00",
  sunday: "closed",
};

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "opening_hours",
      description: "The library's opening hours on one day of the week",
      parameters: {
        type: "object",
        properties: {
          day: { type: "string", enum: Object.keys(HOURS), description: "The day of the week" },
        },
        required: ["day"],
      },
    },
  },
];

export class PromptGenerator {
  constructor(instructions) {
    this.instructions = instructions;
  }

  makeSystemPrompt() {
    return this.instructions.instruction_prompt;
  }

  handleToolCall(toolName, toolInput) {
    if (toolName === "opening_hours") {
      return `On ${toolInput.day} the library is open ${HOURS[toolInput.day]}.`;
    }
    return `Error: Unknown tool: ${toolName}`;
  }
}
