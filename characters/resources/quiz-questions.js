// Questions the quiz show draws from; a resource module, imported by characters, never loaded as one.
export const QUESTIONS = [
  { question: "What is the largest planet in the solar system?", answer: "Jupiter" },
  { question: "How many sides does a hexagon have?", answer: "Six" },
  { question: "Which element has the chemical symbol O?", answer: "Oxygen" },
  { question: "In which city is the Colosseum?", answer: "Rome" },
  { question: "What is the boiling point of water at sea level in degrees Celsius?", answer: "100" },
  { question: "Who wrote 'Romeo and Juliet'?", answer: "William Shakespeare" },
  { question: "What is the smallest prime number?", answer: "Two" },
  { question: "Which ocean is the largest?", answer: "The Pacific Ocean" },
  { question: "How many continents are there?", answer: "Seven" },
  { question: "What gas do plants take in from the air to make sugar?", answer: "Carbon dioxide" },
  { question: "What is the capital of Canada?", answer: "Ottawa" },
  { question: "How many minutes are in a day?", answer: "1440" },
];
