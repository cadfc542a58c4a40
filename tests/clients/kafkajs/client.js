// kafkajs job program: node client.js '<job json>' (or the job on stdin); see ../README.md.
// `node client.js --serve`: a job server running many jobs at once in this one process
// (../README.md, "Job servers"). Modules come from NODE_PATH (the install cache) or ./node_modules.
'use strict'

const { AsyncLocalStorage } = require('async_hooks')
const readline = require('readline')

const {
  Kafka,
  PartitionAssigners,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  ConfigSource,
  Partitioners,
  logLevel,
  AclResourceTypes,
  AclOperationTypes,
  AclPermissionTypes,
  ResourcePatternTypes,
} = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4js')
const zstd = require('@bokuweb/zstd-wasm')

// kafkajs ships only gzip; the others are plugins. lz4js and zstd-wasm are pure JS/wasm, so
// nothing is compiled at install time (the npm codec plugins need node-gyp builds).
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async encoder => Buffer.from(lz4.compress(encoder.buffer)),
  decompress: async buffer => Buffer.from(lz4.decompress(buffer)),
})
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: async encoder => Buffer.from(zstd.compress(encoder.buffer, 3)),
  decompress: async buffer => Buffer.from(zstd.decompress(buffer)),
})

const COMPRESSION = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}
const ACKS = { all: -1, 1: 1, 0: 0 }
const TIMESTAMP_TYPES = { 0: 'CreateTime', 1: 'LogAppendTime' }
const DEFAULT_TIMEOUT_MS = 30000

const b64 = data => (data === null || data === undefined ? null : Buffer.from(data).toString('base64'))
const unb64 = text => (text === null || text === undefined ? null : Buffer.from(text, 'base64'))

// stdout carries only the result line; kafkajs and anything else log to stderr.
const resultStream = process.stdout
console.log = console.error
// A served job's log (the job server's replies carry it); outside a served job, stderr.
const jobLog = new AsyncLocalStorage()
const JOB_LOG_LIMIT = 20000

function logLine(capture, text) {
  if (!capture) return process.stderr.write(text)
  capture.text = (capture.text + text).slice(-JOB_LOG_LIMIT)
}

// kafkajs tells of a broker's throttle time (KIP-219: Produce v6+) only in a debug log line of
// its request queue; `throttle` (a producer's) keeps the largest. Warnings and errors are logged.
const THROTTLED = /^Client side throttling in effect for (\d+)ms$/

function loggerFor(throttle) {
  const capture = jobLog.getStore()
  return () => ({ namespace, level, log }) => {
    const throttled = throttle && THROTTLED.exec(log.message)
    if (throttled) throttle.maxMs = Math.max(throttle.maxMs, Number(throttled[1]))
    if (level <= logLevel.WARN) logLine(capture, `${namespace} ${level} ${JSON.stringify(log)}\n`)
  }
}

function kafkaFor(job, { throttle = null } = {}) {
  return new Kafka({
    clientId: 'minibroker-kafkajs',
    brokers: job.bootstrap.split(','),
    logLevel: throttle ? logLevel.DEBUG : logLevel.WARN,
    logCreator: loggerFor(throttle),
    ...(job.config || {}),
  })
}

// kafkajs takes headers as an object: repeated names become arrays, in order per name.
function headersIn(pairs) {
  const headers = {}
  for (const [name, value] of pairs || []) {
    const data = unb64(value)
    headers[name] = name in headers ? [].concat(headers[name], [data]) : data
  }
  return headers
}

function headersOut(headers) {
  return Object.entries(headers || {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map(v => [name, b64(v)])
  )
}

async function produce(job) {
  const chosen = new Map()
  // The default partitioner, remembering where each record went: kafkajs acknowledges one
  // base offset per partition, and each record's offset follows from its rank there.
  const recordingPartitioner = () => {
    const partitioner = Partitioners.DefaultPartitioner()
    return args => {
      const partition = partitioner(args)
      chosen.set(args.message.index, partition)
      return partition
    }
  }
  const throttle = { maxMs: 0 }
  const producer = kafkaFor(job, { throttle }).producer({
    idempotent: job.idempotent === true,
    createPartitioner: recordingPartitioner,
    ...transactionalOptions(job),
  })
  await producer.connect()
  let crash = false
  try {
    const sender = job.transactional_id == null ? producer : await producer.transaction()
    const messages = job.records.map((record, index) => ({
      index,
      key: unb64(record.key),
      value: unb64(record.value),
      headers: headersIn(record.headers),
      partition: record.partition === null ? undefined : record.partition,
      timestamp: String(record.timestamp ?? Date.now()),
    }))
    const acks = await sender.send({
      topic: job.topic,
      messages,
      acks: ACKS[job.acks ?? 'all'],
      compression: COMPRESSION[job.compression ?? 'none'],
      timeout: job.timeout_ms ?? DEFAULT_TIMEOUT_MS,
    })
    const byPartition = new Map(acks.map(ack => [ack.partition, ack]))
    const ranks = new Map()
    const results = messages.map(message => {
      const partition = message.partition ?? chosen.get(message.index)
      const rank = ranks.get(partition) ?? 0
      ranks.set(partition, rank + 1)
      const ack = byPartition.get(partition)
      const logAppendTime = ack ? Number(ack.logAppendTime) : -1
      return {
        partition,
        offset: ack ? Number(ack.baseOffset) + rank : -1,
        timestamp: logAppendTime !== -1 ? logAppendTime : Number(message.timestamp),
      }
    })
    crash = await endTransaction(sender, job)
    return { ok: true, results, throttle_time_ms_max: throttle.maxMs, crash }
  } finally {
    // a crash leaves the transaction open: nothing is closed, main() exits at once
    if (!crash) await producer.disconnect()
  }
}

// --- transactions ---

function transactionalOptions(job) {
  if (job.transactional_id == null) return {}
  const options = { transactionalId: job.transactional_id, idempotent: true, maxInFlightRequests: 1 }
  if (job.transaction_timeout_ms != null) options.transactionTimeout = job.transaction_timeout_ms
  return options
}

// Commit or abort the job's transaction; true for `open` (then exit as a crash, which needs
// a process of its own).
async function endTransaction(transaction, job) {
  if (job.transactional_id == null) return false
  const ending = job.transaction ?? 'commit'
  if (ending === 'open') requireOwnProcess('an open transaction')
  if (ending === 'commit') await transaction.commit()
  else if (ending === 'abort') await transaction.abort()
  else if (ending !== 'open') throw new Error(`unknown transaction ending '${ending}'`)
  return ending === 'open'
}

// --- produce_paced: one record at a time, for a broker restart while a producer sends ---
// kafkajs acknowledges each send() on its own, so each record waits for its ack before the
// next one (then interval_ms).
async function producePaced(job) {
  const throttle = { maxMs: 0 }
  const producer = kafkaFor(job, { throttle }).producer({ idempotent: job.idempotent === true })
  await producer.connect()
  const results = []
  try {
    for (const record of job.records) {
      const timestamp = String(record.timestamp ?? Date.now())
      const [ack] = await producer.send({
        topic: job.topic,
        messages: [
          {
            key: unb64(record.key),
            value: unb64(record.value),
            headers: headersIn(record.headers),
            partition: record.partition ?? undefined,
            timestamp,
          },
        ],
        acks: ACKS[job.acks ?? 'all'],
        compression: COMPRESSION[job.compression ?? 'none'],
        timeout: job.timeout_ms ?? DEFAULT_TIMEOUT_MS,
      })
      const logAppendTime = Number(ack.logAppendTime ?? -1)
      results.push({
        partition: ack.partition,
        offset: Number(ack.baseOffset),
        timestamp: logAppendTime !== -1 ? logAppendTime : Number(timestamp),
      })
      await new Promise(resolve => setTimeout(resolve, job.interval_ms ?? 50))
    }
    return { ok: true, results, throttle_time_ms_max: throttle.maxMs }
  } finally {
    await producer.disconnect()
  }
}

async function topicPartitions(job) {
  const admin = kafkaFor(job).admin()
  await admin.connect()
  try {
    return (await admin.fetchTopicOffsets(job.topic)).map(({ partition }) => partition)
  } finally {
    await admin.disconnect()
  }
}

// kafkajs has no assign(): it always consumes as a group member, so a job without a group
// uses a fresh group id and never commits.
let freshGroups = 0
async function consume(job) {
  const group = job.group ?? `minibroker-kafkajs-${process.pid}-${Date.now()}-${++freshGroups}`
  const consumer = kafkaFor(job).consumer({
    groupId: group,
    readUncommitted: (job.isolation ?? 'read_uncommitted') === 'read_uncommitted',
    maxWaitTimeInMs: 500,
  })
  const records = []
  await consumer.connect()
  try {
    // From an offset: start at the end and seek; starting at the beginning would deliver
    // records before the seek takes effect.
    await consumer.subscribe({ topics: [job.topic], fromBeginning: (job.from ?? 'earliest') === 'earliest' })
    let finished
    const done = new Promise(resolve => (finished = resolve))
    const timer = setTimeout(finished, job.timeout_ms ?? DEFAULT_TIMEOUT_MS)
    await consumer.run({
      autoCommit: job.group !== null && job.group !== undefined,
      eachMessage: async ({ partition, message }) => {
        if (records.length >= job.count) return
        if (job.partitions && !job.partitions.includes(partition)) return
        records.push({
          partition,
          offset: Number(message.offset),
          key: b64(message.key),
          value: b64(message.value),
          headers: headersOut(message.headers),
          timestamp: Number(message.timestamp),
          timestamp_type: TIMESTAMP_TYPES[message.batchContext.timestampType] ?? null,
        })
        if (records.length >= job.count) finished()
      },
    })
    if (typeof job.from === 'number') {
      for (const partition of await topicPartitions(job)) {
        consumer.seek({ topic: job.topic, partition, offset: String(job.from) })
      }
    }
    await done
    clearTimeout(timer)
  } finally {
    await consumer.disconnect()
  }
  return { ok: true, records, timed_out: records.length < job.count }
}

// --- group_member: a long-running group consumer (../README.md) ---

const protocolLine = line => resultStream.write(JSON.stringify(line) + '\n')

// kafkajs ships only the round-robin assignor.
const ASSIGNERS = { roundrobin: PartitionAssigners.roundRobin }

async function groupMember(job) {
  requireOwnProcess('group_member (stopped by SIGTERM)')
  const assigner = ASSIGNERS[job.assignor ?? 'roundrobin']
  if (!assigner) throw new Error(`kafkajs has no ${job.assignor} assignor`)
  const session = job.session_timeout_ms ?? 10000
  const consumer = kafkaFor(job).consumer({
    groupId: job.group,
    sessionTimeout: session,
    heartbeatInterval: Math.max(Math.floor(session / 5), 10),
    maxWaitTimeInMs: 100,
    metadataMaxAge: 500,
    partitionAssigners: [assigner],
  })
  let stop
  const stopped = new Promise(resolve => (stop = resolve))
  process.on('SIGTERM', () => stop())
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const partitions = payload.memberAssignment[job.topic] ?? []
    protocolLine({ event: 'assigned', partitions: [...partitions].sort((a, b) => a - b) })
  })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [job.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const next = String(BigInt(message.offset) + 1n)
        await consumer.commitOffsets([{ topic: job.topic, partition, offset: next }])
        protocolLine({ event: 'record', partition, offset: Number(message.offset), value: b64(message.value) })
      },
    })
    await stopped
  } finally {
    await consumer.disconnect()
  }
  return { ok: true }
}

// --- admin: one request per item, so each item gets its own error ---

async function withAdmin(job, work) {
  const admin = kafkaFor(job).admin()
  await admin.connect()
  try {
    return await work(admin)
  } finally {
    await admin.disconnect()
  }
}

async function itemOutcome(item, work) {
  try {
    const value = await work()
    Object.assign(item, { error: null, error_name: null })
    return value
  } catch (error) {
    const cause = error.errors && error.errors.length ? error.errors[0] : error
    Object.assign(item, { error: `${cause.name}: ${cause.message}`, error_name: cause.type ?? null })
    return null
  }
}

const metadata = job =>
  withAdmin(job, async admin => {
    const cluster = await admin.describeCluster()
    const names = job.topics ?? (await admin.listTopics())
    const topics = []
    for (const name of names) {
      const topic = { name }
      const found = await itemOutcome(topic, () => admin.fetchTopicMetadata({ topics: [name] }))
      topic.partitions = found
        ? found.topics[0].partitions.map(p => ({ partition: p.partitionId, leader: p.leader }))
        : []
      topics.push(topic)
    }
    return {
      ok: true,
      cluster_id: cluster.clusterId,
      controller: cluster.controller,
      brokers: cluster.brokers.map(b => ({ id: b.nodeId, host: b.host, port: b.port })),
      topics,
    }
  })

// kafkajs answers TOPIC_ALREADY_EXISTS with `false` instead of an error.
const createTopics = job =>
  withAdmin(job, async admin => {
    const topics = []
    for (const spec of job.topics) {
      const item = { name: spec.name }
      const created = await itemOutcome(item, () =>
        admin.createTopics({
          topics: [
            {
              topic: spec.name,
              numPartitions: spec.partitions ?? -1,
              replicationFactor: spec.replication_factor ?? -1,
              configEntries: Object.entries(spec.configs ?? {}).map(([name, value]) => ({ name, value })),
            },
          ],
          timeout: job.timeout_ms ?? DEFAULT_TIMEOUT_MS,
        })
      )
      if (created === false) {
        Object.assign(item, { error: 'createTopics returned false', error_name: 'TOPIC_ALREADY_EXISTS' })
      }
      topics.push(item)
    }
    return { ok: true, topics }
  })

const deleteTopics = job =>
  withAdmin(job, async admin => {
    const topics = []
    for (const name of job.topics) {
      const item = { name }
      await itemOutcome(item, () => admin.deleteTopics({ topics: [name], timeout: job.timeout_ms }))
      topics.push(item)
    }
    return { ok: true, topics }
  })

const createPartitions = job =>
  withAdmin(job, async admin => {
    const topics = []
    for (const spec of job.topics) {
      const item = { name: spec.name }
      await itemOutcome(item, () =>
        admin.createPartitions({ topicPartitions: [{ topic: spec.name, count: spec.count }] })
      )
      topics.push(item)
    }
    return { ok: true, topics }
  })

const RESOURCE_TYPES = { topic: ConfigResourceTypes.TOPIC, broker: ConfigResourceTypes.BROKER }
// Kafka's names for DescribeConfigs' config_source codes (kafkajs calls 1 TOPIC_CONFIG).
const CONFIG_SOURCES = {
  [ConfigSource.UNKNOWN]: 'UNKNOWN',
  [ConfigSource.TOPIC_CONFIG]: 'DYNAMIC_TOPIC_CONFIG',
  [ConfigSource.DYNAMIC_BROKER_CONFIG]: 'DYNAMIC_BROKER_CONFIG',
  [ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]: 'DYNAMIC_DEFAULT_BROKER_CONFIG',
  [ConfigSource.STATIC_BROKER_CONFIG]: 'STATIC_BROKER_CONFIG',
  [ConfigSource.DEFAULT_CONFIG]: 'DEFAULT_CONFIG',
  [ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG]: 'DYNAMIC_BROKER_LOGGER_CONFIG',
}

const describeConfigs = job =>
  withAdmin(job, async admin => {
    const resources = []
    for (const spec of job.resources) {
      const item = { type: spec.type, name: spec.name }
      const described = await itemOutcome(item, () =>
        admin.describeConfigs({
          resources: [{ type: RESOURCE_TYPES[spec.type], name: spec.name }],
          includeSynonyms: false,
        })
      )
      const entries = described ? described.resources[0].configEntries : []
      item.configs = Object.fromEntries(
        entries.map(e => [
          e.configName,
          {
            value: e.configValue,
            source: CONFIG_SOURCES[e.configSource] ?? null,
            read_only: e.readOnly,
            sensitive: e.isSensitive,
          },
        ])
      )
      resources.push(item)
    }
    return { ok: true, resources }
  })

// kafkajs has only the legacy AlterConfigs: it replaces the resource's dynamic configs with
// `set`, and cannot express `delete`.
const alterConfigs = job =>
  withAdmin(job, async admin => {
    const resources = []
    for (const spec of job.resources) {
      const item = { type: spec.type, name: spec.name }
      await itemOutcome(item, async () => {
        if ((spec.delete ?? []).length) throw new Error('kafkajs has no IncrementalAlterConfigs (delete)')
        return admin.alterConfigs({
          resources: [
            {
              type: RESOURCE_TYPES[spec.type],
              name: spec.name,
              configEntries: Object.entries(spec.set ?? {}).map(([name, value]) => ({ name, value })),
            },
          ],
        })
      })
      resources.push(item)
    }
    return { ok: true, resources }
  })

// earliest/latest come from fetchTopicOffsets (low/high), timestamps from
// fetchTopicOffsetsByTimestamp; kafkajs has no max_timestamp and no isolation choice here.
const listOffsets = job =>
  withAdmin(job, async admin => {
    let found
    if (job.spec === 'earliest' || job.spec === 'latest') {
      const side = job.spec === 'earliest' ? 'low' : 'high'
      found = (await admin.fetchTopicOffsets(job.topic)).map(p => ({ partition: p.partition, offset: p[side] }))
    } else if (typeof job.spec === 'number') {
      found = await admin.fetchTopicOffsetsByTimestamp(job.topic, job.spec)
    } else {
      throw new Error(`kafkajs cannot list offsets for ${JSON.stringify(job.spec)}`)
    }
    const offsets = found
      .filter(p => !job.partitions || job.partitions.includes(p.partition))
      .sort((a, b) => a.partition - b.partition)
      .map(p => ({ partition: p.partition, offset: Number(p.offset), timestamp: -1, error: null, error_name: null }))
    return { ok: true, offsets }
  })

// deleteTopicRecords needs the topic's metadata loaded first, and does not return the new
// low watermarks; they are read back afterwards.
const deleteRecords = job =>
  withAdmin(job, async admin => {
    await admin.fetchTopicMetadata({ topics: [job.topic] })
    const partitions = []
    for (const [partition, offset] of Object.entries(job.offsets)) {
      const item = { partition: Number(partition) }
      await itemOutcome(item, () =>
        admin.deleteTopicRecords({ topic: job.topic, partitions: [{ partition: Number(partition), offset: String(offset) }] })
      )
      partitions.push(item)
    }
    const low = new Map((await admin.fetchTopicOffsets(job.topic)).map(p => [p.partition, Number(p.low)]))
    for (const item of partitions) item.low_watermark = item.error ? -1 : low.get(item.partition) ?? -1
    return { ok: true, partitions }
  })

// --- ACLs: Kafka's enum names in jobs, kafkajs takes and gives their codes ---

const ACL_ENUMS = {
  resource_type: AclResourceTypes,
  pattern_type: ResourcePatternTypes,
  operation: AclOperationTypes,
  permission_type: AclPermissionTypes,
}
const ACL_BINDING_DEFAULTS = { pattern_type: 'LITERAL', host: '*', permission_type: 'ALLOW' }
const ACL_FILTER_DEFAULTS = { resource_type: 'ANY', pattern_type: 'ANY', operation: 'ANY', permission_type: 'ANY' }

function aclCodes(spec, defaults) {
  // kafkajs takes an absent (undefined) name, principal or host as null; it refuses null.
  const field = name => spec[name] ?? defaults[name] ?? undefined
  const code = name => {
    const found = ACL_ENUMS[name][field(name)]
    if (found === undefined) throw new Error(`kafkajs has no ${name} ${field(name)}`)
    return found
  }
  return {
    resourceType: code('resource_type'),
    resourceName: field('resource_name'),
    resourcePatternType: code('pattern_type'),
    principal: field('principal'),
    host: field('host'),
    operation: code('operation'),
    permissionType: code('permission_type'),
  }
}

const enumName = (name, code) => Object.keys(ACL_ENUMS[name]).find(key => ACL_ENUMS[name][key] === code)

// kafkajs describes bindings grouped by resource: `resource` gives the pattern, `acl` the entry.
const bindingOut = (resource, acl) => ({
  resource_type: enumName('resource_type', resource.resourceType),
  resource_name: resource.resourceName,
  pattern_type: enumName('pattern_type', resource.resourcePatternType),
  principal: acl.principal,
  host: acl.host,
  operation: enumName('operation', acl.operation),
  permission_type: enumName('permission_type', acl.permissionType),
})

const createAcls = job =>
  withAdmin(job, async admin => {
    const acls = []
    for (const spec of job.acls) {
      const acl = aclCodes(spec, ACL_BINDING_DEFAULTS)
      const item = bindingOut(acl, acl)
      await itemOutcome(item, () => admin.createAcls({ acl: [acl] }))
      acls.push(item)
    }
    return { ok: true, acls }
  })

const describeAcls = job =>
  withAdmin(job, async admin => {
    const result = { ok: true }
    const found = await itemOutcome(result, () => admin.describeAcls(aclCodes(job.filter ?? {}, ACL_FILTER_DEFAULTS)))
    result.acls = (found ? found.resources : []).flatMap(resource => resource.acls.map(acl => bindingOut(resource, acl)))
    return result
  })

// kafkajs throws the first error of a DeleteAcls answer (a filter's or a deleted binding's).
const deleteAcls = job =>
  withAdmin(job, async admin => {
    const filters = []
    for (const spec of job.filters) {
      const item = {}
      const deleted = await itemOutcome(item, () => admin.deleteAcls({ filters: [aclCodes(spec, ACL_FILTER_DEFAULTS)] }))
      const matching = deleted ? deleted.filterResponses[0].matchingAcls : []
      item.acls = matching.map(acl => ({ ...bindingOut(acl, acl), error: null, error_name: null }))
      filters.push(item)
    }
    return { ok: true, filters }
  })

const OPS = {
  produce,
  produce_paced: producePaced,
  consume,
  metadata,
  create_topics: createTopics,
  delete_topics: deleteTopics,
  create_partitions: createPartitions,
  describe_configs: describeConfigs,
  alter_configs: alterConfigs,
  list_offsets: listOffsets,
  delete_records: deleteRecords,
  group_member: groupMember,
  create_acls: createAcls,
  describe_acls: describeAcls,
  delete_acls: deleteAcls,
}

function errorResult(error) {
  return {
    ok: false,
    error: `${error.name}: ${error.message}`,
    error_name: error.type ?? null,
    traceback: error.stack,
  }
}

async function runJob(job) {
  const op = OPS[job.op]
  let result
  try {
    result = op ? await op(job) : { ok: false, error: `unsupported op '${job.op}'`, error_name: 'UNSUPPORTED_OP' }
  } catch (error) {
    result = errorResult(error)
  }
  delete result.crash
  return result
}

async function readJob() {
  if (process.argv.length > 2) return JSON.parse(process.argv[2])
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

async function main() {
  const job = await readJob()
  await zstd.init()
  const result = await runJob(job)
  resultStream.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

// --- the job server: stdin, one request a line, {"id": 7, "job": {...}} or {"id": 7,
// "cancel": true}; stdout, one reply a line, {"id": 7, "result": {...}, "stderr": "..."} or
// {"id": 7, "cancelled": true, "stderr": "..."}. A cancelled job is abandoned (a promise cannot
// be stopped); the server exits when stdin closes.

let serving = false

function requireOwnProcess(what) {
  if (serving) throw new Error(`${what} needs a process of its own, not the job server`)
}

const reply = line => resultStream.write(JSON.stringify(line) + '\n')

async function serveJob(id, job, running) {
  const capture = { text: '' }
  running.set(id, capture)
  const result = await jobLog.run(capture, () => runJob(job))
  if (running.delete(id)) reply({ id, result, stderr: capture.text })
}

async function serve() {
  serving = true
  await zstd.init()
  // A stray rejection from one job's client would end every job's process: log it instead.
  process.on('unhandledRejection', error => logLine(jobLog.getStore(), `unhandled rejection: ${error && error.stack}\n`))
  const running = new Map()
  const requests = readline.createInterface({ input: process.stdin })
  requests.on('line', line => {
    const request = JSON.parse(line)
    if (!request.cancel) return serveJob(request.id, request.job, running)
    const capture = running.get(request.id)
    if (running.delete(request.id)) reply({ id: request.id, cancelled: true, stderr: capture.text })
  })
  requests.on('close', () => process.exit(0))
}

if (process.argv[2] === '--serve') serve()
else main()
