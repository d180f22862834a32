// A form made from a tool's JSON Schema, so a tool can be tried without writing JSON:
// strings, numbers, booleans, enums (as selects, with a way to enter a value outside the
// list, to see how the tool refuses it), nested objects and arrays; defaults filled in,
// required fields marked. Fields left empty are left out of the arguments, as a model
// would leave them out.

import { h } from './dom.js';

let lastId = 0;
const OTHER = '\u0000other';

/** { element, value() }: value() is the arguments object the fields describe. */
export function schemaForm(schema, onInput) {
  const root = objectFields(schema ?? {}, onInput);
  return {
    element: h('div', { class: 'schema-form' }, root.element),
    value: () => root.read().value,
  };
}

/** The schema's type, the first one that is not "null" when it lists several. */
function typeOf(schema) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (type) return type;
  if (schema.properties) return 'object';
  if (schema.items) return 'array';
  return undefined;
}

function objectFields(schema, onInput, initial) {
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, property]) => ({
    name,
    field: field(property ?? {}, {
      name,
      required: required.has(name),
      onInput,
      initial: initial?.[name],
    }),
  }));
  return {
    element: fields.length
      ? fields.map(({ field }) => field.element)
      : h('p', { class: 'muted' }, 'No parameters.'),
    read() {
      const value = {};
      for (const { name, field: f } of fields) {
        const read = f.read();
        if (read.present) value[name] = read.value;
      }
      return { present: Object.keys(value).length > 0, value };
    },
  };
}

/** One field; `item`: an array's element, always sent and so not marked as required. */
function field(schema, { name, required, onInput, initial, item = false }) {
  const start = initial !== undefined ? initial : schema.default;
  const type = typeOf(schema);
  const id = `field-${++lastId}`;
  const mark = required && !item ? h('abbr', { class: 'required', title: 'required', 'aria-hidden': 'true' }, '*') : null;
  const hint = schema.description ? h('small', { class: 'hint' }, schema.description) : null;
  if (type === 'object' || type === 'array') {
    const inner = type === 'object' ? objectFields(schema, onInput, start) : arrayItems(schema, onInput, start);
    return {
      element: h('fieldset', { class: 'field nested' }, h('legend', {}, name, mark), hint, inner.element),
      read() {
        const read = inner.read();
        return { present: read.present || required, value: read.value };
      },
    };
  }
  const control = Array.isArray(schema.enum)
    ? enumControl(schema, id, start, onInput)
    : type === 'boolean'
      ? booleanControl(id, start, onInput)
      : type === 'integer' || type === 'number'
        ? numberControl(type, id, start, onInput)
        : type === 'string'
          ? stringControl(id, start, onInput)
          : jsonControl(id, start, onInput);
  const kind = Array.isArray(schema.enum) ? 'one of' : (type ?? 'JSON');
  const labelled = control.element.id === id ? control.element : control.element.querySelector(`#${id}`);
  if (required && !item) labelled.setAttribute('aria-required', 'true');
  return {
    element: h(
      'div',
      { class: 'field' },
      h(
        'label',
        { for: id },
        h('span', { class: 'field-name' }, name),
        mark,
        h('span', { class: 'field-type', 'aria-hidden': 'true' }, kind),
      ),
      control.element,
      hint,
    ),
    read: control.read,
  };
}

function stringControl(id, start, onInput) {
  const input = h('input', { id, type: 'text', value: start ?? '', oninput: onInput });
  return {
    element: input,
    read: () => ({ present: input.value !== '', value: input.value }),
  };
}

function numberControl(type, id, start, onInput) {
  const input = h('input', {
    id,
    type: 'number',
    step: type === 'integer' ? '1' : 'any',
    value: start ?? '',
    oninput: onInput,
  });
  return {
    element: input,
    read: () => ({ present: input.value !== '', value: Number(input.value) }),
  };
}

function booleanControl(id, start, onInput) {
  const select = h(
    'select',
    { id, onchange: onInput },
    h('option', { value: '' }, '— not set —'),
    h('option', { value: 'true', selected: start === true }, 'true'),
    h('option', { value: 'false', selected: start === false }, 'false'),
  );
  return {
    element: select,
    read: () => ({ present: select.value !== '', value: select.value === 'true' }),
  };
}

function enumControl(schema, id, start, onInput) {
  const values = schema.enum;
  const strings = values.every((value) => typeof value === 'string');
  const other = h('input', {
    type: 'text',
    class: 'other-value',
    'aria-label': 'Other value',
    placeholder: 'a value outside the list',
    hidden: true,
    oninput: onInput,
  });
  const select = h(
    'select',
    {
      id,
      onchange: () => {
        other.hidden = select.value !== OTHER;
        if (!other.hidden) other.focus();
        onInput();
      },
    },
    h('option', { value: '' }, '— not set —'),
    values.map((value, index) =>
      h('option', { value: String(index), selected: start !== undefined && value === start }, JSON.stringify(value)),
    ),
    h('option', { value: OTHER }, 'Other value…'),
  );
  return {
    element: h('div', { class: 'enum' }, select, other),
    read() {
      if (select.value === '') return { present: false };
      if (select.value === OTHER) return { present: true, value: strings ? other.value : parsed(other.value) };
      return { present: true, value: values[Number(select.value)] };
    },
  };
}

/** Any other schema: JSON typed by hand (kept as text when it does not parse, so the tool's validation says why). */
function jsonControl(id, start, onInput) {
  const area = h('textarea', {
    id,
    rows: 2,
    class: 'code',
    placeholder: 'JSON value',
    value: start === undefined ? '' : JSON.stringify(start),
    oninput: onInput,
  });
  return {
    element: area,
    read: () => ({ present: area.value.trim() !== '', value: parsed(area.value) }),
  };
}

function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function arrayItems(schema, onInput, start) {
  const items = [];
  const list = h('ol', { class: 'array-items' });
  const itemSchema = schema.items && typeof schema.items === 'object' ? schema.items : {};
  const add = (initial) => {
    const item = field(itemSchema, { name: `item ${items.length + 1}`, required: true, item: true, onInput, initial });
    const row = h(
      'li',
      {},
      item.element,
      h(
        'button',
        {
          type: 'button',
          class: 'small secondary',
          onclick: () => {
            items.splice(items.indexOf(item), 1);
            row.remove();
            onInput();
          },
        },
        'Remove',
      ),
    );
    items.push(item);
    list.append(row);
  };
  for (const value of Array.isArray(start) ? start : []) add(value);
  return {
    element: [
      list,
      h(
        'button',
        {
          type: 'button',
          class: 'small secondary',
          onclick: () => {
            add(undefined);
            onInput();
          },
        },
        'Add item',
      ),
    ],
    read: () => ({ present: items.length > 0, value: items.map((item) => item.read().value ?? null) }),
  };
}
