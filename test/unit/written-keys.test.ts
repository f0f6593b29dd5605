/**
 * The key intervals a full refresh has written since its truncate (lib/adapters/target/written-keys.ts):
 * batches of several ascending ranges read at once are each new (plain INSERT); a batch meeting
 * an interval written before is not (counted UPSERT).
 */
import { WrittenKeys } from '../../lib/adapters/target/written-keys'

const compare = (a: unknown[], b: unknown[]) => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number) ? -1 : 1
  return 0
}

describe('WrittenKeys', () => {
  test('four ranges interleaved, each ascending: every batch is new', () => {
    const written = new WrittenKeys(compare)
    const batches: Array<[number, number]> = []
    for (let page = 0; page < 5; page++) for (const start of [0, 100, 200, 300]) batches.push([start + page * 10 + 1, start + page * 10 + 10])
    expect(batches.map(([low, high]) => written.add([low], [high]))).toEqual(batches.map(() => true))
  })

  test('a batch overlapping anything written before is not new, and counts as written from then on', () => {
    const written = new WrittenKeys(compare)
    expect(written.add([10], [20])).toBe(true)
    expect(written.add([30], [40])).toBe(true)
    expect(written.add([15], [16])).toBe(false) // inside
    expect(written.add([20], [25])).toBe(false) // touches the high end
    expect(written.add([25], [30])).toBe(false) // touches the low end of the next
    expect(written.add([21], [29])).toBe(false) // now inside the joined interval 10…40
    expect(written.add([41], [50])).toBe(true)
    expect(written.add([1], [9])).toBe(true) // below everything
    expect(written.add([5], [45])).toBe(false)
  })

  test('composite keys compare as tuples', () => {
    const written = new WrittenKeys(compare)
    expect(written.add([1, 1], [1, 9])).toBe(true)
    expect(written.add([2, 1], [2, 9])).toBe(true)
    expect(written.add([1, 5], [1, 6])).toBe(false)
    expect(written.add([1, 10], [1, 20])).toBe(true)
  })
})
