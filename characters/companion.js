// A friendly companion without tools; its prompt knows the time of day.
export const CHARACTER_NAME = "Companion";

export const VOICE_SOURCE = {
  source_type: "file",
  path_on_server: "voices/companion.wav",
  description: "A relaxed, friendly voice",
};

export const INSTRUCTIONS = {
  instruction_prompt:
    "You are a friendly companion for a relaxed chat. Keep answers short and spoken, ask about the " +
    "other person's day, and never lecture.",
  language: "en",
};

export const METADATA = { good: true, comment: "Plain character without tools" };

function partOfDay(hour) {
  if (hour < 5) return "night";
  if (hour < 12) return "morning";
  if (hour < 18) return "afternoon";
  return "evening";
}

export class PromptGenerator {
  constructor(instructions) {
    this.instructions = instructions;
  }

  makeSystemPrompt() {
    const now = new Date();
    return (
      `${this.instructions.instruction_prompt}\n\n` +
      `It is ${partOfDay(now.getHours())} (${now.toISOString().slice(0, 16).replace("T", " ")} UTC on the server).`
    );
  }
}
