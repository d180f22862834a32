// The game master: rolls dice and keeps the score of the players in this conversation.
export const CHARACTER_NAME = "Game Master";

export const VOICE_SOURCE = {
  source_type: "file",
  path_on_server: "voices/game-master.wav",
  description: "An energetic game master",
};

export const INSTRUCTIONS = {
  instruction_prompt:
    "You are the game master of a tabletop game night. You keep the game moving, roll dice when the " +
    "rules call for it, announce results with some drama, and keep score.",
  language: "en",
};

export const METADATA = { good: true, comment: "Dice and a scoreboard, built with tools from the start" };

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "roll_dice",
      description: "Roll dice and get each roll and the total",
      parameters: {
        type: "object",
        properties: {
          count: { type: "integer", minimum: 1, maximum: 10, default: 1, description: "How many dice to roll" },
          sides: {
            type: "integer",
            enum: [4, 6, 8, 10, 12, 20, 100],
            default: 6,
            description: "Sides of each die",
          },
        },
      },
    },
  },
  {
    type: "function",
    function: {
      name: "record_score",
      description: "Add points to a player's score (negative points take some away)",
      parameters: {
        type: "object",
        properties: {
          player: { type: "string", minLength: 1, maxLength: 40, description: "The player's name" },
          points: { type: "integer", minimum: -1000, maximum: 1000, description: "Points to add" },
        },
        required: ["player", "points"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "get_scoreboard",
      description: "Get every player's score, highest first",
      parameters: { type: "object", properties: {} },
    },
  },
];

export class PromptGenerator {
  constructor(instructions) {
    this.instructions = instructions;
    // One scoreboard per conversation: each conversation gets its own instance.
    this.scores = new Map();
  }

  makeSystemPrompt() {
    return (
      `${this.instructions.instruction_prompt}\n\n` +
      "Use roll_dice for every roll: never invent a result. Record points with record_score as soon as " +
      "a player earns them, and read the scoreboard with get_scoreboard before announcing standings."
    );
  }

  handleToolCall(toolName, toolInput) {
    switch (toolName) {
      case "roll_dice": {
        const rolls = Array.from({ length: toolInput.count }, () => 1 + Math.floor(Math.random() * toolInput.sides));
        const total = rolls.reduce((sum, roll) => sum + roll, 0);
        return `Rolled ${toolInput.count}d${toolInput.sides}: ${rolls.join(", ")} (total ${total})`;
      }
      case "record_score": {
        const score = (this.scores.get(toolInput.player) ?? 0) + toolInput.points;
        this.scores.set(toolInput.player, score);
        return `${toolInput.player} now has ${score} points`;
      }
      case "get_scoreboard": {
        if (this.scores.size === 0) return "No scores recorded yet";
        return [...this.scores.entries()]
          .sort((a, b) => b[1] - a[1])
          .map(([player, score], index) => `${index + 1}. ${player}: ${score}`)
          .join("\n");
      }
    }
    throw new Error(`Unknown tool ${toolName}`);
  }
}
