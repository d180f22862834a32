// The quiz show host: every conversation gets 5 random questions from a shared resource.
import { QUESTIONS } from "./resources/quiz-questions.js";

export const CHARACTER_NAME = "Quiz Show";

export const VOICE_SOURCE = {
  source_type: "file",
  path_on_server: "voices/quiz-show.wav",
  description: "A cheerful quiz show host",
};

export const INSTRUCTIONS = {
  instruction_prompt:
    "You are the host of a fast, friendly radio quiz show. Ask one question at a time, wait for the " +
    "answer, say whether it is right, and keep the mood up.",
  language: "en",
};

export const METADATA = { good: true, comment: "Random questions from a shared resource" };

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "reveal_answer",
      description: "Get the correct answer to one of this show's questions",
      parameters: {
        type: "object",
        properties: {
          question: { type: "integer", minimum: 1, maximum: 5, description: "Question number, 1 to 5" },
        },
        required: ["question"],
      },
    },
  },
];

function pickQuestions(count) {
  const pool = [...QUESTIONS];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, count);
}

export class PromptGenerator {
  constructor(instructions) {
    this.instructions = instructions;
    this.questions = pickQuestions(5);
  }

  makeSystemPrompt() {
    const list = this.questions.map((q, index) => `${index + 1}. ${q.question}`).join("\n");
    return (
      `${this.instructions.instruction_prompt}\n\n` +
      `Tonight's questions, in order:\n${list}\n\n` +
      "Do not guess answers: call reveal_answer with the question number to check the contestant's answer."
    );
  }

  handleToolCall(toolName, toolInput) {
    if (toolName === "reveal_answer") {
      const question = this.questions[toolInput.question - 1];
      return `Question ${toolInput.question}: the answer is ${question.answer}`;
    }
    throw new Error(`Unknown tool ${toolName}`);
  }
}
