// KafkaJS 2.2.4 used as a Node service would, against the brokers in argv; driven by
// tests/interop/test_interop_kafkajs.py. Prints one JSON line per step on stdout.
//
//   node check.js round-trip <brokers> <topic> <codec: none|gzip> <group>
//       admin createTopics + fetchTopicMetadata, produce 30 keyed messages, consume them in a
//       group, commitOffsets + fetchOffsets, deleteTopicRecords, describeGroups, deleteGroups
//   node check.js member <brokers> <topic> <group> <name>
//       a consumer-group member that runs until killed, printing each assignment and message
'use strict'

const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const MESSAGES = 30
const PARTITIONS = 3

function say(step, fields) {
  process.stdout.write(JSON.stringify({ step, ...fields }) + '\n')
}

function client(brokers, name) {
  return new Kafka({
    clientId: `zkafka-kafkajs-${name}`,
    brokers: brokers.split(','),
    logLevel: logLevel.ERROR,
    retry: { retries: 8, initialRetryTime: 200 },
  })
}

async function roundTrip(brokers, topic, codec, groupId) {
  const kafka = client(brokers, 'round-trip')
  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
    waitForLeaders: true,
  })
  const metadata = await admin.fetchTopicMetadata({ topics: [topic] })
  say('metadata', {
    created,
    partitions: metadata.topics[0].partitions.map((p) => p.partitionId).sort(),
    leaders: metadata.topics[0].partitions.map((p) => p.leader),
  })

  const producer = kafka.producer()
  await producer.connect()
  const compression = codec === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None
  const messages = []
  for (let i = 0; i < MESSAGES; i++) {
    messages.push({ key: `k${i}`, value: `v${i}`, headers: { n: String(i) } })
  }
  const sent = await producer.send({ topic, compression, acks: -1, messages })
  say('produced', { partitions: sent.map((r) => r.partition).sort(), errors: sent.map((r) => r.errorCode) })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const seen = []
  const next = {}
  const done = new Promise((resolve) => {
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        seen.push({ value: message.value.toString(), header: message.headers.n.toString() })
        next[partition] = (BigInt(message.offset) + 1n).toString()
        if (seen.length === MESSAGES) resolve()
      },
    })
  })
  await done
  say('consumed', { values: seen.map((m) => m.value).sort(), headersKept: seen.every((m) => `v${m.header}` === m.value) })
  await consumer.commitOffsets(Object.entries(next).map(([partition, offset]) => ({ topic, partition: Number(partition), offset })))
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] })
  say('committed', {
    offsets: Object.fromEntries(committed[0].partitions.map((p) => [p.partition, p.offset])),
    expected: next,
  })
  const described = await admin.describeGroups([groupId])
  const group = described.groups[0]
  say('described', { state: group.state, members: group.members.length, protocol: group.protocol })
  await consumer.disconnect()

  const before = await admin.fetchTopicOffsets(topic)
  const p0 = before.find((p) => p.partition === 0)
  const cut = String(Math.floor(Number(p0.high) / 2))
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: cut }] })
  const after = await admin.fetchTopicOffsets(topic)
  say('deleted-records', { cut, low: after.find((p) => p.partition === 0).low, high: p0.high })

  const deleted = await admin.deleteGroups([groupId])
  const left = await admin.listGroups()
  say('deleted-group', {
    results: deleted.map((d) => d.errorCode),
    listed: left.groups.some((g) => g.groupId === groupId),
  })
  await admin.disconnect()
}

async function member(brokers, topic, groupId, name) {
  const kafka = client(brokers, name)
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000 })
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    say('assigned', { name, partitions: (e.payload.memberAssignment[topic] || []).slice().sort() })
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      say('message', { name, partition, value: message.value.toString() })
    },
  })
  say('running', { name })
  const stop = async () => {
    await consumer.disconnect()
    process.exit(0)
  }
  process.on('SIGTERM', stop)
}

async function main() {
  const [command, ...args] = process.argv.slice(2)
  if (command === 'round-trip') return roundTrip(...args)
  if (command === 'member') return member(...args)
  throw new Error(`unknown command ${command}`)
}

main().catch((e) => {
  say('error', { message: String(e && e.stack ? e.stack : e) })
  process.exit(1)
})
