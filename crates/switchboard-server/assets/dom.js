// Building the page's elements without a framework: h() makes an element with its
// attributes, listeners and children; the rest are small formatting helpers.

const PROPERTIES = new Set(['value', 'checked', 'hidden', 'disabled', 'selected', 'open']);

/** h('button', {class: 'x', onclick: f}, 'Send') */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') element.className = value;
    else if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (PROPERTIES.has(name)) element[name] = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces an element's children. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/** JSON text pretty-printed; anything else unchanged (a model's arguments may be broken). */
export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** 0.42 ms, 12 ms, 1.3 s */
export function duration(ms) {
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** `n thing(s)` */
export function count(n, thing) {
  return `${n} ${thing}${n === 1 ? '' : 's'}`;
}
