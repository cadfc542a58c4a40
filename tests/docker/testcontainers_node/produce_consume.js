// The image under @testcontainers/kafka's KafkaContainer, given in place of
// confluentinc/cp-kafka: kafkajs produces through the bootstrap address the module gives and
// a consumer group reads the records back. Prints one JSON line with what the clients saw.
//
//   node produce_consume.js IMAGE zookeeper|kraft COUNT
"use strict";

const { KafkaContainer } = require("@testcontainers/kafka");
const { Kafka, logLevel } = require("kafkajs");

const KAFKA_PORT = 9093; // the module's PLAINTEXT listener, published on the host
const TOPIC = "testcontainers-node";
const GROUP = "testcontainers-node-group";
const CONSUME_TIMEOUT_MS = 60_000;

async function consumeInGroup(kafka, count) {
  const consumer = kafka.consumer({ groupId: GROUP });
  const values = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${values.length} of ${count} records after ${CONSUME_TIMEOUT_MS} ms`)),
        CONSUME_TIMEOUT_MS,
      );
      consumer.run({
        eachMessage: async ({ message }) => {
          values.push(message.value.toString());
          if (values.length === count) {
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return values;
}

async function main() {
  const [image, mode, countText] = process.argv.slice(2);
  const count = Number(countText);
  let container = new KafkaContainer(image);
  if (mode === "kraft") {
    container = container.withKraft();
  }
  const started = await container.start();
  try {
    const bootstrap = `${started.getHost()}:${started.getMappedPort(KAFKA_PORT)}`;
    const kafka = new Kafka({ clientId: "testcontainers-node", brokers: [bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const cluster = await admin.describeCluster();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    const sent = Array.from({ length: count }, (_, i) => `node-${mode}-${i}`);
    await producer.send({ topic: TOPIC, messages: sent.map((value) => ({ value })) });
    await producer.disconnect();

    const received = await consumeInGroup(kafka, count);
    const brokers = cluster.brokers.map(({ host, port }) => `${host}:${port}`);
    console.log(JSON.stringify({ bootstrap, brokers, sent, received }));
  } finally {
    await started.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
