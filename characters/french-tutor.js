// A French conversation tutor without tools.
export const CHARACTER_NAME = "French Tutor";

export const VOICE_SOURCE = {
  source_type: "file",
  path_on_server: "voices/french-tutor.wav",
  description: "A patient French teacher",
};

export const INSTRUCTIONS = {
  instruction_prompt:
    "Tu es un professeur de français patient. Parle lentement, avec des phrases simples, et corrige " +
    "gentiment une erreur à la fois.",
  language: "fr",
};

const TOPICS = ["la météo", "le week-end", "la cuisine", "les voyages", "la musique", "le travail"];

export class PromptGenerator {
  constructor(instructions) {
    this.instructions = instructions;
    this.topic = TOPICS[Math.floor(Math.random() * TOPICS.length)];
  }

  makeSystemPrompt() {
    return `${this.instructions.instruction_prompt}\n\nSujet de conversation proposé : ${this.topic}.`;
  }
}
