// Two DOM helpers: build an element, clone a <template> of index.html.
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  el.append(...children.flat().filter((c) => c != null && c !== false && c !== ''));
  return el;
}

export const fromTemplate = (id) => document.getElementById(id).content.firstElementChild.cloneNode(true);
