// Formatting of sizes, dates and durations for display.
export function bytes(n) {
  if (n == null) return '';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[i];
}

export function date(s) {
  if (!s) return '';
  const d = new Date(s);
  if (isNaN(d)) return String(s);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function ms(n) {
  if (n == null || isNaN(n)) return '';
  if (n < 1000) return Math.round(n) + ' ms';
  if (n < 60000) return (n / 1000).toFixed(1) + ' s';
  return Math.floor(n / 60000) + ' min ' + Math.round((n % 60000) / 1000) + ' s';
}
