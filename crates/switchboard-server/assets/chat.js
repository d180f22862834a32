// One conversation on the page: the transcript, the composer, and a turn streamed in as it
// arrives. A reply is shown in the order things happened: text, then a card per tool call
// (the character's own calls with their results and durations; on a route, the calls the
// model asks the client to run, with their tool_call_errors), then more text. Errors from
// the gateway or the backend appear in the conversation itself.

import { GatewayError, streamChat } from './api.js';
import { count, duration, h, pretty } from './dom.js';

export class Chat {
  /**
   * model: what to send as "model"; characterEvents: ask for the character's own events;
   * prepare(messages): the request's other fields ({messages, tools, tool_choice}), may throw;
   * onSystemPrompt(text): the system prompt a character turn used.
   */
  constructor({ model, characterEvents = false, prepare = (messages) => ({ messages }), onSystemPrompt = () => {} }) {
    this.model = model;
    this.characterEvents = characterEvents;
    this.prepare = prepare;
    this.onSystemPrompt = onSystemPrompt;
    this.messages = [];
    this.openCalls = [];
    this.controller = null;
    this.transcript = h('div', { class: 'transcript', 'aria-live': 'polite' });
    this.input = h('textarea', {
      name: 'message',
      rows: 2,
      placeholder: 'Say something… (Enter sends, Shift+Enter for a new line)',
      'aria-label': 'Message',
      onkeydown: (event) => {
        if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          this.form.requestSubmit();
        }
      },
    });
    this.sendButton = h('button', { type: 'submit' }, 'Send');
    this.form = h(
      'form',
      {
        class: 'composer',
        onsubmit: (event) => {
          event.preventDefault();
          const text = this.input.value.trim();
          if (text && !this.controller) this.send(text);
        },
      },
      this.input,
      h(
        'div',
        { class: 'composer-actions' },
        this.sendButton,
        h('button', { type: 'button', class: 'secondary', onclick: () => this.reset() }, 'New conversation'),
      ),
    );
    this.element = h('div', { class: 'chat' }, this.transcript, this.form);
    this.note('A new conversation.');
  }

  reset() {
    this.controller?.abort();
    this.messages = [];
    this.openCalls = [];
    this.transcript.replaceChildren();
    this.note('A new conversation.');
    this.input.focus();
  }

  note(text) {
    this.transcript.append(h('p', { class: 'note' }, text));
  }

  scroll() {
    this.transcript.scrollTop = this.transcript.scrollHeight;
  }

  async send(text) {
    // Calls the model asked the client to run are answered first, with what their cards hold.
    for (const call of this.openCalls) {
      this.messages.push({ role: 'tool', tool_call_id: call.id, content: call.result.value });
      call.result.disabled = true;
    }
    this.openCalls = [];
    this.messages.push({ role: 'user', content: text });
    this.input.value = '';
    const bubble = h('div', { class: 'turn user' }, h('p', { class: 'text' }, text));
    const turn = new Turn();
    this.transcript.append(bubble, turn.element);
    this.scroll();
    this.controller = new AbortController();
    this.sendButton.disabled = true;
    try {
      const body = {
        model: this.model,
        ...this.prepare(this.messages),
        stream: true,
        stream_options: { include_usage: true },
      };
      await streamChat(body, {
        characterEvents: this.characterEvents,
        signal: this.controller.signal,
        onChunk: (chunk) => {
          turn.chunk(chunk, this.onSystemPrompt);
          this.scroll();
        },
      });
      turn.finish();
      this.messages.push(turn.message());
      this.openCalls = turn.calls.filter((call) => call?.result);
    } catch (error) {
      if (error.name === 'AbortError') {
        turn.fail(new GatewayError('stopped: a new conversation began'));
      } else {
        turn.fail(error instanceof GatewayError ? error : new GatewayError(String(error)));
        // The failed message is not part of the conversation the next request carries.
        this.messages.pop();
        bubble.classList.add('failed');
      }
    } finally {
      this.controller = null;
      this.sendButton.disabled = false;
      this.scroll();
    }
  }
}

/** One streamed reply and its rendering. */
class Turn {
  constructor() {
    this.parts = h('div', { class: 'parts' });
    this.foot = h('p', { class: 'turn-foot' }, h('span', { class: 'pending' }, 'waiting for the reply…'));
    this.element = h('div', { class: 'turn assistant' }, this.parts, this.foot);
    this.text = '';
    this.textNode = null;
    this.reasoningNode = null;
    this.calls = [];
    this.characterCalls = new Map();
    this.usage = null;
    this.finishReason = null;
  }

  chunk(chunk, onSystemPrompt) {
    if (chunk.character_event) this.characterEvent(chunk.character_event, onSystemPrompt);
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = choice.delta ?? {};
    if (delta.reasoning_content) this.reasoning(delta.reasoning_content);
    if (delta.content) this.words(delta.content);
    for (const call of delta.tool_calls ?? []) this.callDelta(call);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    for (const problem of choice.tool_call_errors ?? []) this.calls[problem.index]?.problem(problem);
  }

  words(text) {
    this.text += text;
    if (!this.textNode) {
      this.textNode = h('p', { class: 'text' });
      this.parts.append(this.textNode);
      this.reasoningNode = null;
    }
    this.textNode.textContent += text;
  }

  reasoning(text) {
    if (!this.reasoningNode) {
      this.reasoningNode = h('pre', { class: 'reasoning-text' });
      this.parts.append(h('details', { class: 'reasoning' }, h('summary', {}, 'Reasoning'), this.reasoningNode));
      this.textNode = null;
    }
    this.reasoningNode.textContent += text;
  }

  /** A card interrupts the text: what follows goes below it. */
  card(card) {
    this.parts.append(card.element);
    this.textNode = null;
    this.reasoningNode = null;
  }

  characterEvent(event, onSystemPrompt) {
    if (event.type === 'system_prompt') {
      onSystemPrompt(event.content);
    } else if (event.type === 'tool_started') {
      const card = new ToolCard(event.name, event.id);
      card.setArguments(event.arguments);
      card.running();
      this.characterCalls.set(event.id, card);
      this.card(card);
    } else if (event.type === 'tool_finished') {
      let card = this.characterCalls.get(event.id);
      if (!card) {
        card = new ToolCard(event.name, event.id);
        this.card(card);
      }
      card.finished(event.content, event.is_error, event.duration_ms);
    }
  }

  callDelta(delta) {
    let call = this.calls[delta.index];
    if (!call) {
      call = new ToolCard(delta.function?.name ?? '?', delta.id);
      call.arguments = '';
      this.calls[delta.index] = call;
      this.card(call);
    }
    call.arguments += delta.function?.arguments ?? '';
    call.setArguments(call.arguments);
  }

  finish() {
    for (const call of this.calls) call?.awaitResult();
    const bits = [];
    if (this.finishReason) bits.push(`finish: ${this.finishReason}`);
    if (this.usage) {
      const { prompt_tokens: input, completion_tokens: output, total_tokens: total } = this.usage;
      bits.push(`tokens: ${input} in · ${output} out · ${total} total`);
    }
    if (this.characterCalls.size) bits.push(count(this.characterCalls.size, 'tool call'));
    this.foot.replaceChildren(bits.join('  ·  ') || 'done');
  }

  fail(error) {
    this.foot.replaceChildren();
    this.parts.append(
      h('div', { class: 'error-box', role: 'alert' }, error.label ? h('strong', {}, `${error.label}: `) : null, error.message),
    );
  }

  /** The assistant message the conversation keeps. */
  message() {
    const calls = this.calls.filter(Boolean);
    const message = { role: 'assistant', content: this.text || (calls.length ? null : '') };
    if (calls.length) {
      message.tool_calls = calls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }));
    }
    return message;
  }
}

/** A tool call as a card: name, arguments, then result, error and time as they come. */
class ToolCard {
  constructor(name, id) {
    this.name = name;
    this.id = id;
    this.result = null;
    this.status = h('span', { class: 'tool-status' });
    this.args = h('pre', { class: 'tool-args' });
    this.body = h('div', { class: 'tool-body' });
    this.element = h(
      'div',
      { class: 'tool-card' },
      h('div', { class: 'tool-head' }, h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, 'ƒ'), h('code', { class: 'tool-name' }, name), this.status),
      h('div', { class: 'tool-label' }, 'Arguments'),
      this.args,
      this.body,
    );
  }

  setArguments(text) {
    this.args.textContent = pretty(text) || '{}';
  }

  running() {
    this.element.classList.add('running');
    this.status.textContent = 'running…';
  }

  finished(content, isError, ms) {
    this.element.classList.remove('running');
    this.element.classList.add(isError ? 'failed' : 'ok');
    this.status.textContent = `${isError ? 'error' : 'done'} · ${duration(ms)}`;
    this.body.append(h('div', { class: 'tool-label' }, isError ? 'Error' : 'Result'), h('pre', { class: 'tool-result' }, content));
  }

  /** A tool_call_errors entry about this call. */
  problem(problem) {
    this.element.classList.add('failed');
    this.status.textContent = 'problem';
    this.body.append(
      h('p', { class: 'call-error' }, h('code', {}, problem.code), ' ', problem.message),
    );
  }

  /** A route's call: the client runs it; the result typed here goes back with the next message. */
  awaitResult() {
    this.result = h('textarea', { rows: 2, class: 'code', placeholder: 'what the tool returned (sent with your next message)' });
    this.body.append(h('label', { class: 'tool-label' }, 'Result to send back', this.result));
  }
}
