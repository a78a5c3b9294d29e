/** Median milliseconds of `reads` GETs of `url` (after one untimed); any answer but 200 throws. */
export async function medianGetMs(url: string, headers: Record<string, string>, reads: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i <= reads; i += 1) {
    const started = performance.now();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    if (i > 0) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}
