/* sessionstore export --html: renders the session held in the page's two JSON data elements.
 * Layout and tree drawing follow pi 1.6's export-html template (MIT). Every piece of session text reaches
 * the DOM through textContent or a checked attribute (see safeHref, safeImageSrc), never as HTML.
 * The service's live view (export?format=html&follow=true) adds meta.follow: the page then follows the
 * session's event feed (see "following" at the end); entries that arrive take the same way to the DOM. */
(function () {
  'use strict';

  // -- DOM helpers -------------------------------------------------------------------------------
  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
  /** Text the DOM can hold and serialize: a lone surrogate (JSON allows "\ud800") shown as U+FFFD. */
  function wellFormed(text) {
    return typeof text.toWellFormed === 'function' ? text.toWellFormed() : text.replace(LONE_SURROGATE, '\uFFFD');
  }
  function append(el, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { for (const k of kid) append(el, k); return; }
    el.appendChild(typeof kid === 'object' && kid.nodeType ? kid : document.createTextNode(wellFormed(String(kid))));
  }
  /** An element; attribute names are this file's own, values are set as values (never parsed as HTML). */
  function h(tag, attrs) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const name of Object.keys(attrs)) {
        const value = attrs[name];
        if (value === null || value === undefined || value === false) continue;
        if (name === 'class') el.className = wellFormed(value); else el.setAttribute(name, wellFormed(String(value)));
      }
    }
    for (let i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }
  function str(value) {
    if (typeof value === 'string') return value;
    if (value === null || value === undefined) return '';
    try { return JSON.stringify(value); } catch (e) { return String(value); }
  }
  function isObj(value) { return value !== null && typeof value === 'object' && !Array.isArray(value); }
  function oneLine(text, max) {
    const flat = str(text).replace(/\s+/g, ' ').trim();
    return flat.length > max ? flat.slice(0, max) + '…' : flat;
  }
  function pretty(value) {
    try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
  }
  function formatTime(ts) {
    if (typeof ts !== 'string' && typeof ts !== 'number') return '';
    const d = new Date(ts);
    return isNaN(d.getTime()) ? str(ts) : d.toLocaleString();
  }
  function formatTokens(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '0';
    if (n < 1000) return String(n);
    if (n < 1e6) return (n / 1e3).toFixed(1).replace(/\.0$/, '') + 'k';
    return (n / 1e6).toFixed(2).replace(/\.?0+$/, '') + 'M';
  }

  // -- what may become a URL ---------------------------------------------------------------------
  /** http, https and mailto links only, as the browser parses them. */
  function safeHref(raw) {
    if (typeof raw !== 'string') return null;
    let url;
    try { url = new URL(raw.trim()); } catch (e) { return null; }
    return (url.protocol === 'http:' || url.protocol === 'https:' || url.protocol === 'mailto:') ? url.href : null;
  }
  const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
  const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
  /** A data: URL for an image block, or null: a known image type and a well-formed base64 payload. */
  function safeImageSrc(mimeType, data) {
    if (typeof mimeType !== 'string' || typeof data !== 'string') return null;
    const type = mimeType.trim().toLowerCase();
    if (IMAGE_TYPES.indexOf(type) < 0) return null;
    if (data.length === 0 || data.length % 4 !== 0 || !BASE64.test(data)) return null;
    return 'data:' + type + ';base64,' + data;
  }
  function safeDataUrl(raw) {
    const m = /^data:(image\/[a-z]+);base64,(.*)$/i.exec(typeof raw === 'string' ? raw.trim() : '');
    return m ? safeImageSrc(m[1], m[2]) : null;
  }
  function imageEl(block, cls) {
    const src = safeImageSrc(block.mimeType, block.data);
    if (src === null) return h('div', { class: 'bad-image', 'data-image': 'refused' }, '[image not shown: ' + oneLine(block.mimeType, 40) + ' without valid base64 data]');
    return h('img', { src: src, class: cls || 'image', alt: 'image', 'data-image': 'shown' });
  }

  // -- markdown (a small subset, built as DOM: raw HTML stays text) -------------------------------
  const MD_MAX = 200000;
  const MAX_DEPTH = 12;
  const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|!\[([^\]\n]*)\]\(\s*<?([^\s<>()]+)>?(?:\s+"[^"\n]*")?\s*\)|\[([^\]\n]+)\]\(\s*<?([^\s<>()]+)>?(?:\s+"[^"\n]*")?\s*\)|<((?:https?:\/\/|mailto:)[^\s<>]+)>|(https?:\/\/[^\s<>()[\]"'`]*[^\s<>()[\]"'`.,;:!?])|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__(?!\w)|~~(?=\S)([\s\S]*?\S)~~|\*(?=[^\s*])([^*\n]*?[^\s*])\*|\b_(?=[^\s_])([^_\n]*?[^\s_])_\b/g;

  function textWithBreaks(text) {
    const out = [];
    const parts = text.split('\n');
    parts.forEach(function (part, i) { if (i) out.push(h('br')); if (part) out.push(part); });
    return out;
  }
  function link(href, label) {
    const safe = safeHref(href);
    if (safe === null) return label;
    return h('a', { href: safe, rel: 'noopener noreferrer nofollow', target: '_blank' }, label);
  }
  function inline(text, depth) {
    if (depth > MAX_DEPTH) return textWithBreaks(text);
    const out = [];
    const re = new RegExp(INLINE.source, 'g');
    let last = 0, m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) out.push(textWithBreaks(text.slice(last, m.index)));
      last = re.lastIndex;
      if (m[1] !== undefined) out.push(h('code', null, m[2].replace(/^ (.*) $/, '$1')));
      else if (m[4] !== undefined) {
        const src = safeDataUrl(m[4]);
        if (src !== null) out.push(h('img', { src: src, alt: m[3], 'data-image': 'shown' }));
        else out.push(link(m[4], '[image: ' + (m[3] || m[4]) + ']'));  // never fetched
      } else if (m[6] !== undefined) out.push(link(m[6], inline(m[5], depth + 1)));
      else if (m[7] !== undefined) out.push(link(m[7], m[7]));
      else if (m[8] !== undefined) out.push(link(m[8], m[8]));
      else if (m[9] !== undefined || m[10] !== undefined) out.push(h('strong', null, inline(m[9] !== undefined ? m[9] : m[10], depth + 1)));
      else if (m[11] !== undefined) out.push(h('del', null, inline(m[11], depth + 1)));
      else out.push(h('em', null, inline(m[12] !== undefined ? m[12] : m[13], depth + 1)));
      if (re.lastIndex === m.index) re.lastIndex++;
    }
    if (last < text.length) out.push(textWithBreaks(text.slice(last)));
    return out;
  }

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/;
  const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
  const HR = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}> ?/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
  const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) || ITEM.test(line);
  }
  function cells(line) {
    let s = line.trim();
    if (s.startsWith('|')) s = s.slice(1);
    if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
    return s.split(/(?<!\\)\|/).map(function (c) { return c.trim().replace(/\\\|/g, '|'); });
  }
  function blocks(lines, depth) {
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) { i++; continue; }
      if (depth > MAX_DEPTH) { out.push(h('p', null, textWithBreaks(lines.slice(i).join('\n')))); break; }
      if ((m = FENCE.exec(line))) {
        const fence = m[1], body = [];
        const close = new RegExp('^ {0,3}' + (fence[0] === '`' ? '`' : '~') + '{' + fence.length + ',}\\s*$');
        i++;
        while (i < lines.length && !close.test(lines[i])) body.push(lines[i++]);
        i++;
        out.push(h('pre', { 'data-lang': m[2] || null }, h('code', null, body.join('\n'))));
        continue;
      }
      if ((m = HEADING.exec(line))) {
        out.push(h('h' + m[1].length, null, inline(m[2] || '', depth + 1)));
        i++; continue;
      }
      if (HR.test(line)) { out.push(h('hr')); i++; continue; }
      if (QUOTE.test(line)) {
        const body = [];
        while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ''));
        out.push(h('blockquote', null, blocks(body, depth + 1)));
        continue;
      }
      if ((m = ITEM.exec(line))) {
        const ordered = /\d/.test(m[2]);
        const list = h(ordered ? 'ol' : 'ul');
        if (ordered && parseInt(m[2], 10) !== 1) list.setAttribute('start', String(parseInt(m[2], 10)));
        while (i < lines.length && (m = ITEM.exec(lines[i])) && /\d/.test(m[2]) === ordered) {
          const indent = m[1].length + m[2].length + Math.max(1, Math.min(m[3].length, 4));
          const body = [m[4]];
          i++;
          while (i < lines.length) {
            const next = lines[i];
            if (!next.trim()) {
              // a blank line continues the item when an indented line follows
              if (i + 1 < lines.length && /^\s{2,}\S/.test(lines[i + 1])) { body.push(''); i++; continue; }
              break;
            }
            const lead = next.length - next.trimStart().length;
            if (lead >= 2) { body.push(next.slice(Math.min(lead, indent))); i++; continue; }
            if (startsBlock(next)) break;
            body.push(next); i++;  // a lazy continuation line
          }
          const simple = body.length === 1;
          list.appendChild(h('li', null, simple ? inline(body[0], depth + 1) : blocks(body, depth + 1)));
        }
        out.push(list);
        continue;
      }
      if (line.indexOf('|') >= 0 && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].indexOf('-') >= 0) {
        const head = cells(line);
        const table = h('table', null, h('thead', null, h('tr', null, head.map(function (c) { return h('th', null, inline(c, depth + 1)); }))));
        const tbody = h('tbody');
        i += 2;
        while (i < lines.length && lines[i].trim() && lines[i].indexOf('|') >= 0) {
          tbody.appendChild(h('tr', null, cells(lines[i]).map(function (c) { return h('td', null, inline(c, depth + 1)); })));
          i++;
        }
        table.appendChild(tbody);
        out.push(table);
        continue;
      }
      const para = [line];
      i++;
      while (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) para.push(lines[i++]);
      out.push(h('p', null, inline(para.join('\n'), depth + 1)));
    }
    return out;
  }
  function markdown(text, cls) {
    const source = str(text);
    if (source.length > MD_MAX) return h('pre', { class: 'output' }, source);
    return h('div', { class: 'md' + (cls ? ' ' + cls : '') }, blocks(source.replace(/\r\n?/g, '\n').split('\n'), 0));
  }

  // -- the data ----------------------------------------------------------------------------------
  function readJson(id) {
    const el = document.getElementById(id);
    return el ? el.textContent : '';
  }
  const meta = JSON.parse(readJson('session-meta') || '{}');
  let header = null;
  const entries = [];
  readJson('session-entries').split('\n').forEach(function (line, index) {
    if (!line.trim()) return;
    let value;
    try { value = JSON.parse(line); } catch (e) { value = { type: '(unreadable line)', id: '(line ' + (index + 1) + ')', text: line }; }
    if (!isObj(value)) value = { type: '(not an object)', id: '(line ' + (index + 1) + ')', value: value };
    if (header === null && value.type === 'session') header = value; else entries.push(value);
  });
  header = header || {};
  const labels = isObj(meta.labels) ? meta.labels : {};
  const contextIds = new Set(Array.isArray(meta.contextEntryIds) ? meta.contextEntryIds : []);
  const byId = new Map();
  entries.forEach(function (e) { if (typeof e.id === 'string' && !byId.has(e.id)) byId.set(e.id, e); });
  const children = new Map();
  const roots = [];
  entries.forEach(function (e) {
    const parent = e.parentId;
    if (typeof parent === 'string' && parent !== e.id && byId.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(e);
    } else roots.push(e);
  });
  function kids(e) { return children.get(e.id) || []; }
  // the session's leaf (it moves when the page follows the session)
  let defaultLeaf = typeof meta.leafId === 'string' && byId.has(meta.leafId) ? meta.leafId : null;

  function pathTo(id) {
    const path = [], seen = new Set();
    let cur = byId.get(id);
    while (cur && !seen.has(cur)) {
      seen.add(cur); path.push(cur);
      cur = typeof cur.parentId === 'string' && cur.parentId !== cur.id ? byId.get(cur.parentId) : undefined;
    }
    return path.reverse();
  }
  function newestLeaf(id) {
    let cur = byId.get(id);
    const seen = new Set();
    while (cur && !seen.has(cur) && kids(cur).length) { seen.add(cur); const k = kids(cur); cur = k[k.length - 1]; }
    return cur ? cur.id : id;
  }

  // -- the tree (pi's flattenTree and buildTreePrefix, iterative) --------------------------------
  function flatten(pathIds) {
    const result = [];
    const multipleRoots = roots.length > 1;
    const containsActive = new Map();
    const order = [], pending = roots.slice();
    while (pending.length) { const n = pending.pop(); order.push(n); for (const c of kids(n)) pending.push(c); }
    for (let i = order.length - 1; i >= 0; i--) {
      const n = order[i];
      containsActive.set(n, pathIds.has(n.id) || kids(n).some(function (c) { return containsActive.get(c); }));
    }
    const byActive = function (a, b) { return Number(!!containsActive.get(b)) - Number(!!containsActive.get(a)); };
    const stack = [];
    const orderedRoots = roots.slice().sort(byActive);
    for (let i = orderedRoots.length - 1; i >= 0; i--) {
      stack.push([orderedRoots[i], multipleRoots ? 1 : 0, multipleRoots, multipleRoots, i === orderedRoots.length - 1, [], multipleRoots]);
    }
    const visited = new Set();
    while (stack.length) {
      const [node, indent, justBranched, showConnector, isLast, gutters, virtualRootChild] = stack.pop();
      if (visited.has(node)) continue;
      visited.add(node);
      result.push({ entry: node, indent, showConnector, isLast, gutters, virtualRootChild, multipleRoots });
      const ch = kids(node).slice().sort(byActive);
      const many = ch.length > 1;
      const childIndent = many ? indent + 1 : (justBranched && indent > 0 ? indent + 1 : indent);
      const shown = showConnector && !virtualRootChild;
      const displayIndent = multipleRoots ? Math.max(0, indent - 1) : indent;
      const childGutters = shown ? gutters.concat([{ position: Math.max(0, displayIndent - 1), show: !isLast }]) : gutters;
      for (let i = ch.length - 1; i >= 0; i--) stack.push([ch[i], childIndent, many, many, i === ch.length - 1, childGutters, false]);
    }
    return result;
  }
  function treePrefix(f) {
    const displayIndent = f.multipleRoots ? Math.max(0, f.indent - 1) : f.indent;
    const connector = f.showConnector && !f.virtualRootChild;
    const at = connector ? displayIndent - 1 : -1;
    let s = '';
    for (let i = 0; i < displayIndent * 3; i++) {
      const level = Math.floor(i / 3), pos = i % 3;
      const gutter = f.gutters.find(function (g) { return g.position === level; });
      if (gutter) s += pos === 0 ? (gutter.show ? '│' : ' ') : ' ';
      else if (connector && level === at) s += pos === 0 ? (f.isLast ? '└' : '├') : pos === 1 ? '─' : ' ';
      else s += ' ';
    }
    return s;
  }
  function textOf(content) {
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return '';
    return content.filter(function (b) { return isObj(b) && b.type === 'text'; }).map(function (b) { return str(b.text); }).join(' ');
  }
  function toolBrief(name, args) {
    if (!isObj(args)) return oneLine(args, 120);
    const keys = ['command', 'path', 'file_path', 'pattern', 'url', 'query'];
    for (const k of keys) if (typeof args[k] === 'string') return oneLine(args[k], 160);
    const first = Object.keys(args).find(function (k) { return typeof args[k] === 'string'; });
    return first ? oneLine(args[first], 120) : '';
  }
  function treeText(e) {
    const out = [];
    const label = typeof e.id === 'string' ? labels[e.id] : undefined;
    if (label !== undefined && label !== null) out.push(h('span', { class: 'tree-label' }, '[' + str(label) + '] '));
    const span = function (cls, text) { return h('span', { class: cls }, text); };
    const msg = e.message;
    if (e.type === 'message' && isObj(msg)) {
      const role = msg.role;
      if (role === 'user') out.push(span('tree-role-user', 'user: '), oneLine(textOf(msg.content), 100));
      else if (role === 'assistant') {
        const text = oneLine(textOf(msg.content), 100);
        const calls = Array.isArray(msg.content) ? msg.content.filter(function (b) { return isObj(b) && b.type === 'toolCall'; }) : [];
        out.push(span('tree-role-assistant', 'assistant: '));
        if (text) out.push(text);
        else if (calls.length) out.push(span('tree-role-tool', calls.map(function (c) { return str(c.name) + ' ' + toolBrief(c.name, c.arguments); }).join(', ').slice(0, 100)));
        else if (msg.stopReason === 'aborted') out.push(span('tree-muted', '(aborted)'));
        else if (msg.stopReason === 'error') out.push(span('tree-error', oneLine(msg.errorMessage, 80)));
        else out.push(span('tree-muted', '(no text)'));
      } else if (role === 'toolResult') out.push(span('tree-role-tool', '[' + (str(msg.toolName) || 'tool') + '] '), span('tree-muted', oneLine(textOf(msg.content), 80)));
      else if (role === 'bashExecution') out.push(span('tree-role-tool', '[bash]: '), oneLine(msg.command, 100));
      else out.push(span('tree-muted', '[' + str(role) + '] '), oneLine(textOf(msg.content) || msg.text || msg.summary, 80));
    } else if (e.type === 'compaction') out.push(span('tree-summary', '[compaction: ' + Math.round((Number(e.tokensBefore) || 0) / 1000) + 'k tokens]'));
    else if (e.type === 'branch_summary') out.push(span('tree-summary', '[branch summary]: '), oneLine(e.summary, 100));
    else if (e.type === 'custom_message') out.push(span('tree-role-tool', '[' + str(e.customType) + ']: '), oneLine(typeof e.content === 'string' ? e.content : textOf(e.content), 100));
    else if (e.type === 'model_change') out.push(span('tree-muted', '[model: ' + str(e.provider) + '/' + str(e.modelId) + ']'));
    else if (e.type === 'thinking_level_change') out.push(span('tree-muted', '[thinking: ' + str(e.thinkingLevel) + ']'));
    else if (e.type === 'label') out.push(span('tree-muted', '[label ' + str(e.targetId) + ': ' + (e.label === undefined ? '(removed)' : str(e.label)) + ']'));
    else if (e.type === 'session_info') out.push(span('tree-muted', '[name: ' + str(e.name) + ']'));
    else out.push(span('tree-muted', '[' + str(e.type) + (e.customType ? ': ' + str(e.customType) : '') + ']'));
    return out;
  }
  const SETTINGS = ['label', 'session_info', 'custom', 'model_change', 'thinking_level_change', 'context_edit'];
  let filter = 'default';
  function filteredOut(e, leafId) {
    if (e.id === leafId) return false;
    if (filter === 'all') return false;
    if (filter === 'user-only') return !(e.type === 'message' && isObj(e.message) && e.message.role === 'user');
    if (filter === 'labeled-only') return !(typeof e.id === 'string' && labels[e.id] !== undefined);
    return SETTINGS.indexOf(e.type) >= 0;
  }

  // -- messages ----------------------------------------------------------------------------------
  let leafId = defaultLeaf;
  let targetId = null;
  // contextIds describe the context at contextLeaf (the session leaf when the page was made; a followed
  // page moves it along the appends it can account for, else sets contextStale: see liveContext)
  let contextLeaf = defaultLeaf;
  let contextStale = false;
  const live = { added: 0 };  // entries that arrived by the feed (a followed page)
  function contextShown() { return !contextStale && leafId !== null && leafId === contextLeaf; }
  let resultsByCall = new Map();
  let consumed = new Set();

  function metaLine(e, role) {
    const label = typeof e.id === 'string' ? labels[e.id] : undefined;
    return h('div', { class: 'entry-meta' }, h('span', { class: 'role' }, role),
      label !== undefined && label !== null ? h('span', { class: 'entry-label' }, '[' + str(label) + ']') : null,
      h('span', { class: 'ts' }, formatTime(e.timestamp)));
  }
  function card(e, cls, role, msgKind) {
    const attrs = { class: 'entry ' + cls, 'data-entry-id': str(e.id), 'data-entry-type': str(e.type), id: 'entry-' + str(e.id) };
    if (msgKind) {
      attrs['data-msg'] = msgKind;
      if (contextShown()) attrs['data-in-context'] = contextIds.has(e.id) ? 'true' : 'false';
    }
    const el = h('div', attrs, metaLine(e, role));
    if (attrs['data-in-context'] === 'false') el.classList.add('not-in-context');
    return el;
  }
  function contentBlocks(content, textAsMarkdown) {
    if (typeof content === 'string') return textAsMarkdown ? markdown(content) : h('pre', { class: 'output' }, content);
    if (!Array.isArray(content)) return content === undefined || content === null ? null : h('pre', { class: 'json' }, pretty(content));
    const out = [];
    let images = null;
    for (const b of content) {
      if (isObj(b) && b.type === 'image') {
        if (!images) { images = h('div', { class: 'images' }); out.push(images); }
        images.appendChild(imageEl(b));
        continue;
      }
      images = null;
      if (isObj(b) && b.type === 'text') out.push(textAsMarkdown ? markdown(b.text) : h('pre', { class: 'output' }, str(b.text)));
      else if (isObj(b) && b.type === 'thinking') out.push(thinking(b));
      else out.push(h('pre', { class: 'json' }, pretty(b)));
    }
    return out;
  }
  function thinking(b) {
    const text = str(b.thinking);
    if (!text.trim()) return b.redacted ? h('div', { class: 'thinking' }, '(thinking redacted)') : null;
    return h('details', { class: 'thinking', 'data-block': 'thinking' }, h('summary', null, 'Thinking…'), h('div', { class: 'thinking-text' }, text));
  }
  function resultBody(msg) {
    const out = [];
    const content = msg.content;
    const texts = [], images = [];
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const b of content) {
        if (isObj(b) && b.type === 'text') texts.push(str(b.text));
        else if (isObj(b) && b.type === 'image') images.push(imageEl(b));
        else texts.push(pretty(b));
      }
    } else if (content !== undefined) texts.push(pretty(content));
    const text = texts.join('\n');
    if (text) out.push(h('pre', { class: 'output' }, text));
    if (images.length) out.push(h('div', { class: 'images' }, images));
    return { nodes: out, lines: text ? text.split('\n').length : 0 };
  }
  function toolResultEl(entry, standalone) {
    const msg = entry.message;
    const isError = msg.isError === true;
    const body = resultBody(msg);
    const attrs = { class: 'tool-result' + (isError ? ' error' : ''), 'data-msg': 'toolResult', 'data-entry-id': str(entry.id),
      'data-tool-call-id': str(msg.toolCallId), id: 'entry-' + str(entry.id) };
    if (contextShown()) attrs['data-in-context'] = contextIds.has(entry.id) ? 'true' : 'false';
    if (body.lines <= 12) attrs.open = '';
    const el = h('details', attrs, h('summary', null, (isError ? 'error' : 'result') + (body.lines ? ' (' + body.lines + ' line' + (body.lines === 1 ? '' : 's') + ')' : '') + (standalone ? ' of ' + str(msg.toolName) + ' ' + str(msg.toolCallId) : '')), body.nodes);
    if (attrs['data-in-context'] === 'false') el.classList.add('not-in-context');
    return el;
  }
  function toolCallEl(b) {
    const id = str(b.id);
    const result = resultsByCall.get(id);
    const usable = result && !consumed.has(result);
    if (usable) consumed.add(result);
    const status = !usable ? 'pending' : result.message.isError === true ? 'error' : 'ok';
    const args = b.arguments;
    const el = h('div', { class: 'tool-call ' + status, 'data-tool-call-id': id, 'data-tool-name': str(b.name), 'data-status': status },
      h('div', { class: 'tool-head' }, h('span', { class: 'tool-name' }, str(b.name) || '(tool)'), ' ',
        h('span', { class: 'tool-brief' }, toolBrief(b.name, args)),
        h('span', { class: 'tool-status' }, usable ? '' : '(no result on this branch)')),
      h('details', { class: 'tool-args' }, h('summary', null, 'arguments'), h('pre', { class: 'output' }, pretty(args))));
    if (usable) el.appendChild(toolResultEl(result, false));
    return el;
  }
  function renderMessage(e) {
    const msg = e.message;
    if (!isObj(msg)) {
      const el = card(e, 'other-message', 'message', 'missing');
      el.appendChild(h('pre', { class: 'json' }, pretty(e)));
      return el;
    }
    const role = msg.role;
    if (role === 'user') {
      const el = card(e, 'user-message', 'user', 'user');
      append(el, contentBlocks(msg.content, true));
      return el;
    }
    if (role === 'assistant') {
      const el = card(e, 'assistant-message', 'assistant' + (msg.model ? ' · ' + str(msg.provider ? msg.provider + '/' + msg.model : msg.model) : ''), 'assistant');
      const content = Array.isArray(msg.content) ? msg.content : [];
      if (!Array.isArray(msg.content)) append(el, contentBlocks(msg.content, true));
      let images = null;
      for (const b of content) {
        if (isObj(b) && b.type === 'toolCall') { images = null; el.appendChild(toolCallEl(b)); }
        else if (isObj(b) && b.type === 'image') {
          if (!images) { images = h('div', { class: 'images' }); el.appendChild(images); }
          images.appendChild(imageEl(b));
        } else { images = null; append(el, contentBlocks([b], true)); }
      }
      if (msg.stopReason === 'aborted') el.appendChild(h('div', { class: 'error-text' }, 'Aborted' + (msg.errorMessage ? ': ' + str(msg.errorMessage) : '')));
      else if (msg.stopReason === 'error') el.appendChild(h('div', { class: 'error-text' }, 'Error: ' + (str(msg.errorMessage) || 'unknown error')));
      return el;
    }
    if (role === 'toolResult') {
      if (consumed.has(e)) return null;  // shown with its call
      consumed.add(e);
      const el = h('div', { class: 'entry tool-call ' + (msg.isError === true ? 'error' : 'ok'), 'data-entry-type': 'message' }, metaLine(e, 'tool result'));
      el.appendChild(toolResultEl(e, true));
      return el;
    }
    if (role === 'bashExecution') {
      const code = msg.exitCode;
      const failed = msg.cancelled === true || (typeof code === 'number' && code !== 0);
      const el = card(e, 'bash-execution' + (failed ? ' error' : ''), 'bash' + (msg.excludeFromContext ? ' (not sent to the model)' : ''), 'bashExecution');
      el.appendChild(h('div', { class: 'tool-command' }, '$ ' + str(msg.command)));
      if (str(msg.output)) el.appendChild(h('pre', { class: 'output' }, str(msg.output)));
      const status = msg.cancelled === true ? 'cancelled' : code === null || code === undefined ? 'no exit code' : 'exit ' + str(code);
      el.appendChild(h('div', { class: 'bash-status', 'data-exit-code': str(code) }, '(' + status + (msg.truncated ? ', output truncated' : '') + ')'));
      return el;
    }
    if (role === 'custom') {
      const el = card(e, 'custom-message' + (msg.display === false ? ' hidden-in-terminal' : ''), '[' + str(msg.customType) + ']', 'custom');
      append(el, contentBlocks(msg.content, true));
      return el;
    }
    if (role === 'branchSummary' || role === 'compactionSummary') {
      const el = card(e, 'summary-card', role === 'branchSummary' ? 'branch summary' : 'compaction summary', role);
      el.appendChild(markdown(msg.summary));
      return el;
    }
    if (role === 'system') {
      const el = card(e, 'other-message', 'system', 'system');
      const d = h('details', null, h('summary', null, 'system prompt' + (msg.sections ? ' and sections' : '')));
      append(d, contentBlocks(msg.content, false));
      if (isObj(msg.sections)) for (const k of Object.keys(msg.sections)) d.appendChild(h('div', null, h('div', { class: 'info-label' }, k), h('pre', { class: 'output' }, msg.sections[k] === null ? '(removed)' : str(msg.sections[k]))));
      el.appendChild(d);
      return el;
    }
    const el = card(e, 'other-message', str(role) || 'message', 'other');
    el.appendChild(h('pre', { class: 'json' }, pretty(msg)));
    return el;
  }
  function renderEntry(e) {
    if (e.type === 'message') return renderMessage(e);
    if (e.type === 'compaction') {
      const el = card(e, 'summary-card', 'compaction', 'compaction');
      const d = h('details', { 'data-block': 'compaction' }, h('summary', null, 'Compacted from ' + (Number(e.tokensBefore) || 0).toLocaleString() + ' tokens' + (e.firstKeptEntryId ? ' (kept from ' + str(e.firstKeptEntryId) + ')' : '')));
      d.appendChild(markdown(e.summary));
      el.appendChild(d);
      return el;
    }
    if (e.type === 'branch_summary') {
      const el = card(e, 'summary-card', 'branch summary' + (e.fromId ? ' (from ' + str(e.fromId) + ')' : ''), 'branchSummary');
      el.appendChild(markdown(e.summary));
      return el;
    }
    if (e.type === 'custom_message') {
      const el = card(e, 'custom-message' + (e.display === false ? ' hidden-in-terminal' : ''), '[' + str(e.customType) + ']' + (e.display === false ? ' · hidden in the terminal' : ''), 'custom');
      append(el, contentBlocks(e.content, true));
      return el;
    }
    if (e.type === 'model_change') {
      return h('div', { class: 'entry muted-line', 'data-entry-id': str(e.id), 'data-entry-type': 'model_change', id: 'entry-' + str(e.id) },
        'Switched to model ', h('span', { class: 'model-name' }, str(e.provider) + '/' + str(e.modelId)));
    }
    if (e.type === 'thinking_level_change') {
      return h('div', { class: 'entry muted-line', 'data-entry-id': str(e.id), 'data-entry-type': 'thinking_level_change', id: 'entry-' + str(e.id) },
        'Thinking level: ' + str(e.thinkingLevel));
    }
    if (e.type === 'context_edit') {
      return h('div', { class: 'entry muted-line', 'data-entry-id': str(e.id), 'data-entry-type': 'context_edit', id: 'entry-' + str(e.id) },
        'Context edit of ' + str(e.targetId) + ': ' + (e.replacement === null || e.replacement === undefined ? 'omitted' : 'replaced'));
    }
    return null;  // labels, names, extension data: in the tree and the header
  }

  // -- the page ----------------------------------------------------------------------------------
  let thinkingOpen = false;
  let outputsOpen = null;  // null: as rendered (short results open)

  // Counts the header shows, each named by what it counts, so that the parts add up to the total.
  const ROLE_NAMES = { user: ['user', 'user'], assistant: ['assistant', 'assistant'],
    toolResult: ['tool result', 'tool results'], bashExecution: ['bash execution', 'bash executions'],
    custom: ['custom message', 'custom messages'], system: ['system message', 'system messages'],
    branchSummary: ['branch summary', 'branch summaries'], compactionSummary: ['compaction summary', 'compaction summaries'] };
  const KIND_NAMES = { message: ['message', 'messages'], compaction: ['compaction', 'compactions'],
    branch_summary: ['branch summary', 'branch summaries'], custom_message: ['custom message', 'custom messages'],
    model_change: ['model change', 'model changes'], thinking_level_change: ['thinking level change', 'thinking level changes'],
    context_edit: ['context edit', 'context edits'], label: ['label', 'labels'], session_info: ['name entry', 'name entries'],
    custom: ['extension entry', 'extension entries'] };
  function countParts(values, names, other) {
    const counts = new Map();
    values.forEach(function (v) { counts.set(v, (counts.get(v) || 0) + 1); });
    const known = Object.keys(names).filter(function (k) { return counts.has(k); });
    const rest = Array.from(counts.keys()).filter(function (k) { return !Object.prototype.hasOwnProperty.call(names, k); });
    return known.map(function (k) { const n = counts.get(k); return n + ' ' + names[k][n === 1 ? 0 : 1]; })
      .concat(rest.map(function (k) { const n = counts.get(k); return n + ' ' + other(k, n); }));
  }
  function messageCounts(list) {
    const roles = list.filter(function (e) { return e.type === 'message'; })
      .map(function (e) { return isObj(e.message) && typeof e.message.role === 'string' ? e.message.role : '(no role)'; });
    const parts = countParts(roles, ROLE_NAMES, function (role, n) { return "'" + role + "' message" + (n === 1 ? '' : 's'); });
    return (parts.join(', ') || '0') + ' (' + roles.length + ' message ' + (roles.length === 1 ? 'entry' : 'entries') + ' in all)';
  }
  function entryCounts(list) {
    const kinds = list.map(function (e) { return typeof e.type === 'string' ? e.type : '(no type)'; });
    const parts = countParts(kinds, KIND_NAMES, function (kind, n) { return "'" + kind + "' " + (n === 1 ? 'entry' : 'entries'); });
    return list.length + (list.length === 1 ? ' entry' : ' entries') + (parts.length ? ': ' + parts.join(', ') : '');
  }

  function infoRow(label, value) {
    return [h('span', { class: 'info-label' }, label), h('span', { class: 'info-value' }, value)];
  }
  function renderHeader(path) {
    const stats = isObj(meta.stats) ? meta.stats : {};
    const tokens = isObj(stats.tokens) ? stats.tokens : {};
    const session = isObj(meta.session) ? meta.session : {};
    const name = typeof meta.name === 'string' && meta.name ? meta.name : null;
    const tokenParts = [];
    if (tokens.input) tokenParts.push('↑' + formatTokens(tokens.input));
    if (tokens.output) tokenParts.push('↓' + formatTokens(tokens.output));
    if (tokens.cacheRead) tokenParts.push('R' + formatTokens(tokens.cacheRead));
    if (tokens.cacheWrite) tokenParts.push('W' + formatTokens(tokens.cacheWrite));
    const models = Array.isArray(stats.breakdown) ? stats.breakdown.map(function (b) { return str(b.key) + ' ($' + (Number(b.cost) || 0).toFixed(3) + ', ' + formatTokens(b.tokens) + ' tokens)'; }) : [];
    const grid = h('div', { class: 'header-info', 'data-stats': '' },
      infoRow('Session:', str(meta.sessionId || header.id)),
      name ? infoRow('Name:', name) : null,
      infoRow('Directory:', str(meta.cwd || header.cwd)),
      infoRow('Created:', formatTime(meta.created || header.timestamp)),
      session.modified ? infoRow('Modified:', formatTime(session.modified)) : null,
      session.parentSession ? infoRow('Parent session:', str(session.parentSession)) : null,
      infoRow('Entries:', String(entries.length)),
      infoRow('Messages:', messageCounts(entries)),
      infoRow('Tool calls:', String(stats.toolCalls || 0)),
      infoRow('Tokens:', tokenParts.join(' ') || '0'),
      infoRow('Cost:', '$' + (Number(stats.cost) || 0).toFixed(3)),
      models.length ? infoRow('Models:', models.join(', ')) : null,
      infoRow('This branch:', entryCounts(path) + (contextShown() && typeof meta.contextMessageCount === 'number' ? '; the model sees ' + meta.contextMessageCount + ' messages at the leaf (after compaction and context edits)' : '')
        + (contextStale && leafId === defaultLeaf ? "; the model's context changed since the page was made (a compaction, a context edit or another branch): reload to see which messages it holds" : '')),
      live.added ? infoRow('Live:', live.added + (live.added === 1 ? ' entry' : ' entries') + ' arrived since the page was made; tool calls, tokens, cost and models are as of then') : null);
    const thinkingBtn = h('button', { type: 'button', 'aria-pressed': String(thinkingOpen), 'data-action': 'thinking', title: 'Show or hide thinking (T)' }, 'Thinking');
    const toolsBtn = h('button', { type: 'button', 'aria-pressed': String(outputsOpen === true), 'data-action': 'tools', title: 'Open or close every tool result (O)' }, 'Tool output');
    thinkingBtn.addEventListener('click', toggleThinking);
    toolsBtn.addEventListener('click', toggleOutputs);
    const bar = h('div', { class: 'help-bar' }, thinkingBtn, toolsBtn, h('span', null, 'T thinking · O tool output · click the tree to show a branch'));
    const box = h('div', { class: 'header' }, h('h1', null, name || 'Session ' + str(meta.sessionId || header.id)), grid, bar);
    if (leafId !== defaultLeaf) {
      const back = h('button', { type: 'button', 'data-action': 'back' }, 'back to the session leaf');
      back.addEventListener('click', function () { navigate(defaultLeaf, null); });
      box.appendChild(h('div', { class: 'branch-note' }, 'Showing the branch to ' + str(leafId) + ', not the session leaf. ', back));
    }
    const el = document.getElementById('header');
    el.textContent = '';
    el.appendChild(box);
  }
  function renderTree(pathIds) {
    const container = document.getElementById('tree');
    container.textContent = '';
    const frag = document.createDocumentFragment();
    let shown = 0;
    for (const f of flatten(pathIds)) {
      const e = f.entry;
      const on = pathIds.has(e.id);
      const node = h('div', { class: 'tree-node' + (on ? ' on-path' : '') + (e.id === leafId ? ' current' : '') + (e.id === targetId ? ' target' : '') + (filteredOut(e, leafId) ? ' filtered' : ''),
        'data-entry-id': str(e.id), 'data-on-path': on ? 'true' : 'false', title: str(e.id) + ' · ' + str(e.type) },
        h('span', { class: 'tree-prefix' }, treePrefix(f)), h('span', { class: 'tree-marker' }, on ? '• ' : '  '), treeText(e));
      if (!node.classList.contains('filtered')) shown++;
      node.addEventListener('click', function () { navigate(newestLeaf(e.id), e.id); });
      frag.appendChild(node);
    }
    container.appendChild(frag);
    document.getElementById('tree-status').textContent = shown + ' of ' + entries.length + ' entries shown · ' + pathIds.size + ' on this branch';
  }
  function renderMessages(path) {
    resultsByCall = new Map();
    consumed = new Set();
    for (const e of path) {
      const m = e.message;
      if (e.type === 'message' && isObj(m) && m.role === 'toolResult' && typeof m.toolCallId === 'string' && !resultsByCall.has(m.toolCallId)) resultsByCall.set(m.toolCallId, e);
    }
    const frag = document.createDocumentFragment();
    for (const e of path) {
      let el;
      try { el = renderEntry(e); } catch (err) {
        el = h('div', { class: 'entry other-message', 'data-entry-id': str(e.id), 'data-render-error': String(err) }, 'This entry could not be shown: ' + String(err), h('pre', { class: 'json' }, pretty(e)));
      }
      if (el) frag.appendChild(el);
    }
    const messages = document.getElementById('messages');
    messages.textContent = '';
    messages.appendChild(frag);
    applyToggles();
  }
  function applyToggles() {
    document.querySelectorAll('details.thinking').forEach(function (d) { d.open = thinkingOpen; });
    if (outputsOpen !== null) document.querySelectorAll('details.tool-result').forEach(function (d) { d.open = outputsOpen; });
  }
  function toggleThinking() { thinkingOpen = !thinkingOpen; applyToggles(); syncButtons(); }
  function toggleOutputs() { outputsOpen = outputsOpen !== true; applyToggles(); syncButtons(); }
  function syncButtons() {
    document.querySelectorAll('[data-action="thinking"]').forEach(function (b) { b.setAttribute('aria-pressed', String(thinkingOpen)); });
    document.querySelectorAll('[data-action="tools"]').forEach(function (b) { b.setAttribute('aria-pressed', String(outputsOpen === true)); });
  }
  function navigate(leaf, target) {
    leafId = leaf;
    targetId = target;
    const path = leaf === null ? [] : pathTo(leaf);
    const pathIds = new Set(path.map(function (e) { return e.id; }));
    renderHeader(path);
    renderTree(pathIds);
    renderMessages(path);
    document.body.setAttribute('data-leaf-id', leaf === null ? '' : str(leaf));
    document.body.setAttribute('data-path-length', String(path.length));
    if (target) {
      const el = document.getElementById('entry-' + target);
      if (el) { el.classList.add('target-entry'); el.scrollIntoView({ block: 'center' }); }
    }
  }

  document.querySelectorAll('.filter-btn').forEach(function (btn) {
    btn.addEventListener('click', function () {
      filter = btn.getAttribute('data-filter') || 'default';
      document.querySelectorAll('.filter-btn').forEach(function (b) { b.classList.toggle('active', b === btn); });
      renderTree(new Set(pathTo(leafId).map(function (e) { return e.id; })));
    });
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === 't' || ev.key === 'T') toggleThinking();
    else if (ev.key === 'o' || ev.key === 'O') toggleOutputs();
  });

  // ?leafId=ID shows the branch to ID, &targetId=ID scrolls to that entry (pi's deep links)
  let params;
  try { params = new URLSearchParams(window.location.search); } catch (e) { params = new URLSearchParams(''); }
  const askedLeaf = params.get('leafId'), askedTarget = params.get('targetId');
  if (askedLeaf !== null && byId.has(askedLeaf)) leafId = askedLeaf;
  let rendered = false;
  try {
    navigate(leafId, askedTarget !== null && byId.has(askedTarget) ? askedTarget : null);
    document.body.setAttribute('data-rendered', 'ok');
    rendered = true;
  } catch (err) {
    document.body.setAttribute('data-rendered', 'error');
    document.body.setAttribute('data-render-error', String(err && err.stack || err));
    append(document.getElementById('messages'), h('pre', { class: 'error-text' }, 'The session could not be shown: ' + String(err)));
  }

  // -- following (the service's live view only) --------------------------------------------------
  // meta.follow = {events: URL of the session's feed relative to the page, after: the seq of the newest
  // entry when the page was made}. An EventSource reads the feed from there: `entry` (id: its seq; data:
  // the stored line) is added to the model as an append (the session leaf moves to it), `leaf` moves the
  // session leaf, `deleted` ends it, `resume` {after} (the server cut a slow reader off) reconnects after
  // that seq. A dropped connection reconnects by itself, sending Last-Event-ID. The view follows the
  // session leaf unless the reader chose another branch (it stays there; "back" returns to the new leaf).
  function liveContext(e, known) {
    // The context ids stay true for an append at the context's leaf that only adds messages after it
    // (as pi's buildSessionContext does); a compaction or context edit re-plans the context, and an
    // entry elsewhere or a leaf move puts it on another path: then it is not shown as known any more.
    if (contextStale) return;
    const parent = typeof e.parentId === 'string' ? e.parentId : null;
    if (parent !== contextLeaf || e.type === 'compaction' || e.type === 'context_edit') { contextStale = true; return; }
    contextLeaf = e.id;
    if (known && contextIds.has(e.id)) return;  // (already in the page's context)
    const adds = (e.type === 'message' && e.message !== null && e.message !== undefined) || e.type === 'custom_message'
      || (e.type === 'branch_summary' && Boolean(e.summary));
    if (adds) {
      contextIds.add(e.id);
      if (typeof meta.contextMessageCount === 'number') meta.contextMessageCount++;
    }
  }
  function addLive(e) {
    const known = typeof e.id === 'string' && byId.has(e.id);
    if (!known) {
      entries.push(e);
      if (typeof e.id === 'string') byId.set(e.id, e);
      const parent = e.parentId;
      if (typeof parent === 'string' && parent !== e.id && byId.has(parent)) {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(e);
      } else roots.push(e);
      live.added++;
      if (e.type === 'label' && typeof e.targetId === 'string') {
        if (e.label) labels[e.targetId] = e.label; else delete labels[e.targetId];
      }
      if (e.type === 'session_info') meta.name = typeof e.name === 'string' && e.name.trim() ? e.name.trim() : null;
    }
    if (typeof e.id !== 'string') return;
    liveContext(e, known);
    moveSessionLeaf(e.id);
  }
  let viewLeaf = null;  // the leaf to show at the next render (null: as it is)
  function moveSessionLeaf(id) {
    if (leafId === defaultLeaf || viewLeaf === defaultLeaf) viewLeaf = id;  // the reader was on the session leaf
    defaultLeaf = id;
    if (id !== contextLeaf) contextStale = true;
  }
  let renderPending = null;
  function scheduleRender() {
    if (renderPending !== null) return;
    renderPending = setTimeout(function () {
      renderPending = null;
      const atEnd = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40;
      const leaf = viewLeaf !== null ? viewLeaf : leafId;
      viewLeaf = null;
      const named = typeof meta.name === 'string' && meta.name ? meta.name : null;
      document.title = named ? named + ' - session ' + str(meta.sessionId) : 'Session ' + str(meta.sessionId);
      navigate(leaf, null);
      if (atEnd) window.scrollTo(0, document.documentElement.scrollHeight);
    }, 50);
  }
  function follow(config) {
    const status = h('div', { id: 'live-status', class: 'live-status', role: 'status', 'data-live': 'connecting' }, 'live: connecting…');
    const content = document.getElementById('content');
    content.insertBefore(status, content.firstChild);
    function say(state, text) { status.setAttribute('data-live', state); status.textContent = text; }
    let base;
    try { base = new URL(str(config.events), window.location.href); } catch (e) { say('off', 'live: no event feed'); return; }
    let lastSeq = Number.isInteger(config.after) ? config.after : -1;
    function open(after) {
      const url = new URL(base.href);
      url.searchParams.set('after', String(after));
      const es = new EventSource(url.href);
      es.addEventListener('open', function () { say('following', 'live: following the session'); });
      es.addEventListener('error', function () {
        if (es.readyState === EventSource.CLOSED) say('closed', 'live: the feed refused the page (the session may be gone): reload to try again');
        else say('reconnecting', 'live: reconnecting…');
      });
      es.addEventListener('entry', function (ev) {
        const seq = parseInt(ev.lastEventId, 10);
        if (Number.isInteger(seq)) { if (seq <= lastSeq) return; lastSeq = seq; }
        let e;
        try { e = JSON.parse(ev.data); } catch (err) { e = { type: '(unreadable line)', id: '(seq ' + str(ev.lastEventId) + ')', text: ev.data }; }
        if (!isObj(e)) e = { type: '(not an object)', id: '(seq ' + str(ev.lastEventId) + ')', value: e };
        addLive(e);
        scheduleRender();
      });
      es.addEventListener('leaf', function (ev) {
        let data;
        try { data = JSON.parse(ev.data); } catch (err) { return; }
        if (!isObj(data)) return;
        const id = typeof data.leafId === 'string' && byId.has(data.leafId) ? data.leafId : null;
        if (id === defaultLeaf) return;
        moveSessionLeaf(id);
        scheduleRender();
      });
      es.addEventListener('deleted', function () {
        es.close();
        say('deleted', 'live: session deleted. This page still shows it as it was; nothing more will arrive.');
        document.body.setAttribute('data-session-deleted', 'true');
      });
      es.addEventListener('resume', function (ev) {
        let data = null;
        try { data = JSON.parse(ev.data); } catch (err) { data = null; }
        // (the last seq sent, which is the page's own: the lower one, should they differ, skips nothing)
        const after = isObj(data) && Number.isInteger(data.after) ? Math.min(data.after, lastSeq) : lastSeq;
        es.close();
        say('reconnecting', 'live: reconnecting…');
        open(after);
      });
    }
    open(lastSeq);
  }
  if (rendered && isObj(meta.follow) && typeof EventSource === 'function') follow(meta.follow);
})();
