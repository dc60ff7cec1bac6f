// A small Server-Sent Events reader for POST streams (EventSource can only GET). Comment lines
// (`: open`, `: ping`) are skipped, several `data:` lines are joined with a newline.
export function sseParser(onEvent) {
  let rest = '';
  let event = '';
  let data = [];
  return (chunk) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    for (let line of lines) {
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length > 0) onEvent(event || 'message', data.join('\n'));
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
  };
}
