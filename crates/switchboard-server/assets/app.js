// The playground page: the characters (with the problems of their files) and the routes in
// the sidebar; a character's panel with its chat, its system prompt and a form per tool; a
// route's panel with a chat whose tools and tool_choice are edited on the page. The list
// is read again every few seconds while the page is visible, so a character file saved on
// disk shows up here without reloading anything.

import { GatewayError, apiKey, getJson, postJson, setApiKey } from './api.js';
import { Chat } from './chat.js';
import { count, duration, h, replace } from './dom.js';
import { schemaForm } from './schema-form.js';

const REFRESH_MS = 2000;

const els = {
  characters: document.getElementById('character-list'),
  rejected: document.getElementById('rejected-list'),
  rejectedSection: document.getElementById('rejected-section'),
  routes: document.getElementById('route-list'),
  sidebarError: document.getElementById('sidebar-error'),
  main: document.getElementById('main'),
  key: document.getElementById('api-key'),
};

let listing = { characters: [], rejected: [] };
let listingText = '';
let routes = [];
let view = null;

function selection() {
  const [kind, ...rest] = decodeURIComponent(location.hash.slice(1)).split('/');
  return { kind, id: rest.join('/') };
}

function select(kind, id) {
  location.hash = `${kind}/${encodeURIComponent(id)}`;
}

function showSidebarError(error) {
  els.sidebarError.hidden = !error;
  els.sidebarError.textContent = error
    ? `${error.label ? `${error.label}: ` : ''}${error.message}`
    : '';
}

async function refresh() {
  try {
    const next = await getJson('/v1/characters');
    showSidebarError(null);
    const text = JSON.stringify(next);
    if (text === listingText) return;
    listingText = text;
    listing = next;
    renderSidebar();
    view?.update?.();
  } catch (error) {
    showSidebarError(error);
  }
}

async function loadRoutes() {
  try {
    const models = await getJson('/v1/models');
    routes = models.data.map((model) => model.id).filter((id) => !id.startsWith('character/'));
  } catch (error) {
    showSidebarError(error);
  }
  renderSidebar();
}

function item(kind, id, current, ...content) {
  const selected = current.kind === kind && current.id === id;
  return h(
    'li',
    {},
    h('button', { type: 'button', class: 'item', 'aria-current': selected ? 'true' : null, onclick: () => select(kind, id) }, content),
  );
}

function renderSidebar() {
  const current = selection();
  replace(
    els.characters,
    listing.characters.length
      ? listing.characters.map((character) =>
          item(
            'character',
            character.id,
            current,
            h('span', { class: 'item-name' }, character.name),
            h('span', { class: 'item-sub' }, `${character.file} · ${count(character.tools.length, 'tool')}`),
            character.problems.length ? h('span', { class: 'badge warn' }, 'problems') : null,
            character.listed ? null : h('span', { class: 'badge' }, 'hidden'),
          ),
        )
      : h('li', { class: 'muted' }, 'No characters are loaded.'),
  );
  els.rejectedSection.hidden = listing.rejected.length === 0;
  replace(
    els.rejected,
    listing.rejected.map((rejection) =>
      item(
        'file',
        rejection.file,
        current,
        h('span', { class: 'item-name' }, rejection.file),
        h('span', { class: 'badge error' }, count(rejection.problems.length, 'problem')),
      ),
    ),
  );
  replace(
    els.routes,
    routes.length
      ? routes.map((route) => item('route', route, current, h('span', { class: 'item-name' }, route)))
      : h('li', { class: 'muted' }, 'No routes are configured.'),
  );
}

/** Every problem of a file: where (file:line:column, export path) and what. */
function problemList(problems) {
  return h(
    'ul',
    { class: 'problems' },
    problems.map((problem) =>
      h(
        'li',
        {},
        problem.line ? h('code', { class: 'where' }, `${problem.file}:${problem.line}:${problem.column}`) : null,
        problem.path ? h('code', { class: 'where' }, problem.path) : null,
        h('span', { class: 'problem-message' }, problem.message),
      ),
    ),
  );
}

function text(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function characterView(id) {
  const find = () => listing.characters.find((character) => character.id === id);
  let shown = null;
  let toolsText = '';
  let usedPrompt = null;

  const title = h('h2');
  const meta = h('p', { class: 'meta' });
  const status = h('div');
  const promptText = h('pre', { class: 'prompt-text' }, 'Loading…');
  const promptNote = h('p', { class: 'muted' });
  const prompt = h(
    'details',
    {
      class: 'prompt',
      ontoggle: () => {
        if (prompt.open && usedPrompt === null) loadPrompt();
      },
    },
    h('summary', {}, 'System prompt'),
    promptNote,
    promptText,
  );
  const tools = h('div', { class: 'tool-forms' });
  const chat = new Chat({
    model: `character/${id}`,
    characterEvents: true,
    onSystemPrompt: (content) => {
      usedPrompt = content;
      promptNote.textContent = 'As built for the last turn of this conversation:';
      promptText.textContent = content;
    },
  });

  async function loadPrompt() {
    promptNote.textContent = 'As a new conversation gets it now:';
    try {
      const character = await getJson(`/v1/characters/${encodeURIComponent(id)}`);
      if (usedPrompt !== null) return;
      promptText.textContent = character.system_prompt ?? `The prompt could not be built: ${character.system_prompt_error}`;
    } catch (error) {
      promptText.textContent = `${error.label ? `${error.label}: ` : ''}${error.message}`;
    }
  }

  function update() {
    const character = find();
    if (!character) {
      const rejection = listing.rejected.find((r) => r.file.replace(/\.js$/, '') === id);
      replace(
        status,
        h(
          'div',
          { class: 'notice error', role: 'alert' },
          h('p', {}, rejection ? `${rejection.file} does not load, and no earlier version is running:` : 'This character is no longer loaded (its file was removed or renamed).'),
          rejection ? problemList(rejection.problems) : null,
        ),
      );
      return;
    }
    shown = character;
    replace(title, character.name, ' ', h('small', {}, character.file));
    const voice = character.voice_source?.description ?? character.voice_source?.source_type;
    replace(
      meta,
      [
        voice && `Voice: ${voice}`,
        character.instructions?.language && `Language: ${character.instructions.language}`,
        count(character.tools.length, 'tool'),
        `tool timeout ${character.tool_timeout_ms} ms`,
        character.listed ? null : 'hidden from /v1/models',
      ]
        .filter(Boolean)
        .join('  ·  '),
    );
    replace(
      status,
      character.problems.length
        ? h(
            'div',
            { class: 'notice warn', role: 'alert' },
            h('p', {}, `The last save of ${character.file} does not load; the last good version keeps running. Fix:`),
            problemList(character.problems),
          )
        : null,
    );
    const nextTools = JSON.stringify(character.tools);
    if (nextTools !== toolsText) {
      toolsText = nextTools;
      replace(
        tools,
        character.tools.length
          ? character.tools.map((tool) => toolForm(id, tool.function))
          : h('p', { class: 'muted' }, 'This character has no tools.'),
      );
    }
  }

  const instructions = h('details', { class: 'prompt' }, h('summary', {}, 'Instructions'), h('pre', { class: 'prompt-text' }));
  instructions.addEventListener('toggle', () => {
    instructions.lastChild.textContent = shown ? JSON.stringify(shown.instructions, null, 2) : '';
  });

  const element = h(
    'section',
    { class: 'panel' },
    h('header', { class: 'panel-head' }, title, meta),
    status,
    h('div', { class: 'disclosures' }, prompt, instructions),
    h(
      'div',
      { class: 'columns' },
      h('section', { class: 'chat-column', 'aria-label': 'Chat' }, h('h3', {}, 'Chat'), chat.element),
      h('section', { class: 'tools-column', 'aria-label': 'Tools' }, h('h3', {}, 'Try a tool'), tools),
    ),
  );
  return { element, update };
}

function toolForm(characterId, tool) {
  const args = h('textarea', { class: 'code args', rows: 3, spellcheck: 'false', 'aria-label': `Arguments sent to ${tool.name}` });
  const sync = () => {
    args.value = JSON.stringify(form.value(), null, 2);
  };
  const form = schemaForm(tool.parameters, sync);
  sync();
  const result = h('div', { class: 'call-result', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit' }, 'Call');
  return h(
    'form',
    {
      class: 'tool-form',
      onsubmit: async (event) => {
        event.preventDefault();
        button.disabled = true;
        replace(result, h('p', { class: 'muted' }, 'Calling…'));
        try {
          const answer = await postJson(
            `/v1/characters/${encodeURIComponent(characterId)}/tools/${encodeURIComponent(tool.name)}`,
            { arguments: args.value },
          );
          replace(
            result,
            h('p', { class: 'result-head' }, h('strong', {}, answer.is_error ? 'Error' : 'Result'), ` · took ${duration(answer.duration_ms)}`),
            h('pre', { class: answer.is_error ? 'tool-result failed' : 'tool-result ok' }, answer.content),
          );
        } catch (error) {
          replace(result, h('div', { class: 'error-box', role: 'alert' }, error.label ? h('strong', {}, `${error.label}: `) : null, error.message));
        } finally {
          button.disabled = false;
        }
      },
    },
    h('h4', {}, h('code', {}, tool.name)),
    tool.description ? h('p', { class: 'hint' }, tool.description) : null,
    form.element,
    h('details', { class: 'raw' }, h('summary', {}, 'Arguments as sent (editable)'), args),
    h('div', { class: 'form-actions' }, button),
    result,
  );
}

const EXAMPLE_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'The city' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city'],
      },
    },
  },
];

function routeView(route) {
  const system = h('textarea', { rows: 2, placeholder: 'optional system message', 'aria-label': 'System message' });
  const tools = h('textarea', {
    class: 'code tools-editor',
    rows: 12,
    spellcheck: 'false',
    'aria-label': 'Tools',
    value: JSON.stringify(EXAMPLE_TOOLS, null, 2),
  });
  const choice = h('select', { 'aria-label': 'tool_choice' });
  const toolsStatus = h('p', { class: 'hint' });

  const parseTools = () => {
    const source = tools.value.trim();
    if (!source) return [];
    let list;
    try {
      list = JSON.parse(source);
    } catch (error) {
      throw new GatewayError(`the tools are not valid JSON: ${error.message}`);
    }
    if (!Array.isArray(list)) throw new GatewayError('the tools must be a JSON list of {"type": "function", "function": {…}}');
    return list;
  };
  const syncChoices = () => {
    let names = [];
    try {
      names = parseTools().map((tool) => tool?.function?.name).filter((name) => typeof name === 'string');
      toolsStatus.className = 'hint';
      toolsStatus.textContent = names.length ? `${count(names.length, 'tool')}: ${names.join(', ')}` : 'No tools: the model answers in words.';
    } catch (error) {
      toolsStatus.className = 'hint error';
      toolsStatus.textContent = error.message;
    }
    const previous = choice.value;
    replace(
      choice,
      ['auto', 'none', 'required'].map((value) => h('option', { value }, value)),
      names.map((name) => h('option', { value: `function:${name}` }, `function: ${name}`)),
    );
    if ([...choice.options].some((option) => option.value === previous)) choice.value = previous;
  };
  tools.addEventListener('input', syncChoices);
  syncChoices();

  const chat = new Chat({
    model: route,
    prepare: (messages) => {
      const list = parseTools();
      const body = { messages: system.value.trim() ? [{ role: 'system', content: system.value.trim() }, ...messages] : messages };
      if (list.length) {
        body.tools = list;
        body.tool_choice = choice.value.startsWith('function:')
          ? { type: 'function', function: { name: choice.value.slice('function:'.length) } }
          : choice.value;
      }
      return body;
    },
  });

  const element = h(
    'section',
    { class: 'panel' },
    h('header', { class: 'panel-head' }, h('h2', {}, route, ' ', h('small', {}, 'route')), h('p', { class: 'meta' }, 'Chat with the model behind this route. Calls it makes are checked against your tools; problems show on the call.')),
    h(
      'div',
      { class: 'columns' },
      h('section', { class: 'chat-column', 'aria-label': 'Chat' }, h('h3', {}, 'Chat'), chat.element),
      h(
        'section',
        { class: 'tools-column', 'aria-label': 'Request' },
        h('h3', {}, 'Request'),
        h('label', { class: 'stacked' }, 'System message', system),
        h('label', { class: 'stacked' }, 'Tools (OpenAI function format)', tools),
        toolsStatus,
        h('label', { class: 'stacked' }, 'tool_choice', choice),
      ),
    ),
  );
  return { element };
}

function fileView(file) {
  const body = h('div');
  const update = () => {
    const rejection = listing.rejected.find((r) => r.file === file);
    replace(
      body,
      rejection
        ? [h('p', {}, `${file} did not load. Every problem:`), problemList(rejection.problems)]
        : h('p', {}, `${file} has no problems now; pick it among the characters.`),
    );
  };
  update();
  return {
    element: h('section', { class: 'panel' }, h('header', { class: 'panel-head' }, h('h2', {}, file, ' ', h('small', {}, 'failed to load'))), h('div', { class: 'notice error', role: 'alert' }, body)),
    update,
  };
}

/** Views already opened, so a conversation is still there when you come back to it. */
const views = new Map();

function route() {
  const { kind, id } = selection();
  const key = `${kind}/${id}`;
  if (!views.has(key)) {
    const made =
      kind === 'character' ? characterView(id)
      : kind === 'route' ? routeView(id)
      : kind === 'file' ? fileView(id)
      : null;
    if (made) views.set(key, made);
  }
  view = views.get(key) ?? null;
  if (view) {
    view.update?.();
    replace(els.main, view.element);
  } else {
    replace(els.main, h('p', { class: 'placeholder' }, 'Pick a character to chat with it and try its tools, or a route to chat with a model directly.'));
  }
  renderSidebar();
}

els.key.value = apiKey();
els.key.addEventListener('change', () => {
  setApiKey(els.key.value.trim());
  listingText = '';
  refresh();
  loadRoutes();
});
window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') refresh();
});
setInterval(() => {
  if (document.visibilityState === 'visible') refresh();
}, REFRESH_MS);

await Promise.all([refresh(), loadRoutes()]);
route();
