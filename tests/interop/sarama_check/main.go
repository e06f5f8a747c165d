// sarama_check drives Debian's Shopify/sarama (1.22.1) against a broker the way a Go service
// would, at one Kafka protocol version chosen on the command line, and prints one JSON line per
// step: {"step": ..., "ok": bool, "detail": ...}. The Python test decides what must pass.
//
// Old versions matter: at V0_8_2_0 sarama produces magic-0 message sets with Produce v0 and
// fetches with Fetch v0; at V0_10_0_0 magic 1; from V0_11_0_0 on record batches (magic 2).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type result struct {
	Step   string `json:"step"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

func report(step string, err error, detail string) bool {
	r := result{Step: step, OK: err == nil, Detail: detail}
	if err != nil {
		r.Detail = err.Error()
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
	return err == nil
}

func versionOf(name string) sarama.KafkaVersion {
	v, err := sarama.ParseKafkaVersion(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return v
}

func codecOf(name string) sarama.CompressionCodec {
	switch name {
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	case "zstd":
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}

type groupHandler struct {
	mu     sync.Mutex
	seen   map[string]bool
	want   int
	doneCh chan struct{}
	once   sync.Once
}

func (h *groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *groupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.seen[string(m.Value)] = true
		n := len(h.seen)
		h.mu.Unlock()
		s.MarkMessage(m, "")
		if n >= h.want {
			h.once.Do(func() { close(h.doneCh) })
		}
	}
	return nil
}

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "broker list")
	version := flag.String("version", "2.0.0", "Kafka version sarama speaks")
	codec := flag.String("codec", "none", "none|gzip|snappy|lz4|zstd")
	topic := flag.String("topic", "sarama", "topic to create and use")
	count := flag.Int("count", 500, "records to produce")
	debug := flag.Bool("debug", false, "sarama's own log on stderr")
	flag.Parse()
	if *debug {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Ltime|log.Lmicroseconds)
	}
	brokers := strings.Split(*bootstrap, ",")

	cfg := sarama.NewConfig()
	cfg.Version = versionOf(*version)
	cfg.ClientID = "sarama-check"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = codecOf(*codec)
	cfg.Producer.Flush.Messages = 50
	cfg.Producer.Flush.Frequency = 10 * time.Millisecond // without it a partial batch waits for ever
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.CommitInterval = 100 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	modern := cfg.Version.IsAtLeast(sarama.V0_10_2_0)

	// sarama's admin needs DescribeConfigs (0.11+) for ListTopics; older clients auto-create.
	if cfg.Version.IsAtLeast(sarama.V0_11_0_0) {
		admin, err := sarama.NewClusterAdmin(brokers, cfg)
		if !report("admin.connect", err, "") {
			os.Exit(1)
		}
		err = admin.CreateTopic(*topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
			ConfigEntries: map[string]*string{"retention.ms": strPtr("3600000")}}, false)
		report("admin.create_topic", err, "")
		err = admin.CreateTopic(*topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false)
		report("admin.create_topic_again_fails", expectErr(err, sarama.ErrTopicAlreadyExists), "")
		// CreateTopics answers once the controller has elected the leaders; the other brokers learn
		// of the topic from UpdateMetadata a moment later (as in Kafka), and ListTopics may ask any
		// of them: look again for a while, as an application would.
		var topics map[string]sarama.TopicDetail
		detail := ""
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			topics, err = admin.ListTopics()
			if err == nil {
				d, ok := topics[*topic]
				if !ok || d.NumPartitions != 3 {
					err = fmt.Errorf("listed %v", topics)
				} else {
					detail = fmt.Sprintf("partitions=%d rf=%d", d.NumPartitions, d.ReplicationFactor)
				}
			}
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		report("admin.list_topics", err, detail)
		brs, controller, err := admin.DescribeCluster()
		report("admin.describe_cluster", err, fmt.Sprintf("brokers=%d controller=%d", len(brs), controller))
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: *topic})
		if err == nil {
			err = fmt.Errorf("retention.ms not described as 3600000")
			for _, e := range entries {
				if e.Name == "retention.ms" && e.Value == "3600000" {
					err = nil
				}
			}
		}
		report("admin.describe_config", err, fmt.Sprintf("%d entries", len(entries)))
		err = admin.AlterConfig(sarama.TopicResource, *topic, map[string]*string{"retention.ms": strPtr("7200000")}, false)
		report("admin.alter_config", err, "")
		if cfg.Version.IsAtLeast(sarama.V1_0_0_0) { // sarama refuses CreatePartitions below 1.0 itself
			err = admin.CreatePartitions(*topic, 4, nil, false)
			report("admin.create_partitions", err, "")
		}
		admin.Close()
	}

	producer, err := sarama.NewSyncProducer(brokers, cfg)
	if !report("producer.connect", err, "") {
		os.Exit(1)
	}
	var msgs []*sarama.ProducerMessage
	for i := 0; i < *count; i++ {
		m := &sarama.ProducerMessage{Topic: *topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%7)),
			Value: sarama.StringEncoder(fmt.Sprintf("v%05d", i))}
		if cfg.Version.IsAtLeast(sarama.V0_11_0_0) {
			m.Headers = []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(i))}}
		}
		msgs = append(msgs, m)
	}
	err = producer.SendMessages(msgs)
	report("producer.send", err, fmt.Sprintf("%d records", len(msgs)))
	producer.Close()

	// Read every partition back with the plain consumer and check every value arrived once.
	client, err := sarama.NewClient(brokers, cfg)
	if !report("client.connect", err, "") {
		os.Exit(1)
	}
	parts, err := client.Partitions(*topic)
	report("client.partitions", err, fmt.Sprint(parts))
	consumer, err := sarama.NewConsumerFromClient(client)
	report("consumer.connect", err, "")
	got := map[string]int{}
	headersOK := true
	for _, p := range parts {
		newest, err := client.GetOffset(*topic, p, sarama.OffsetNewest)
		if err != nil {
			report("consumer.offsets", err, "")
			continue
		}
		if newest == 0 {
			continue
		}
		pc, err := consumer.ConsumePartition(*topic, p, sarama.OffsetOldest)
		if err != nil {
			report("consumer.partition", err, "")
			continue
		}
		deadline := time.After(20 * time.Second)
	loop:
		for {
			select {
			case m := <-pc.Messages():
				got[string(m.Value)]++
				if cfg.Version.IsAtLeast(sarama.V0_11_0_0) && len(m.Headers) != 1 {
					headersOK = false
				}
				if m.Offset+1 >= newest {
					break loop
				}
			case e := <-pc.Errors():
				report("consumer.error", e, "")
				break loop
			case <-deadline:
				break loop
			}
		}
		pc.Close()
	}
	err = nil
	if len(got) != *count {
		err = fmt.Errorf("read %d distinct of %d", len(got), *count)
	}
	for v, n := range got {
		if n != 1 {
			err = fmt.Errorf("%s read %d times", v, n)
		}
	}
	if !headersOK {
		err = fmt.Errorf("headers lost")
	}
	report("consumer.read_back", err, fmt.Sprintf("%d distinct", len(got)))
	consumer.Close()

	if modern {
		group := *topic + "-group"
		cg, err := sarama.NewConsumerGroup(brokers, group, cfg)
		if report("group.connect", err, "") {
			h := &groupHandler{seen: map[string]bool{}, want: *count, doneCh: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for e := range cg.Errors() {
					report("group.error", e, "")
				}
			}()
			go func() {
				for ctx.Err() == nil {
					if err := cg.Consume(ctx, []string{*topic}, h); err != nil {
						report("group.consume_error", err, "")
						time.Sleep(200 * time.Millisecond)
					}
				}
			}()
			select {
			case <-h.doneCh:
				report("group.consume", nil, fmt.Sprintf("%d distinct", len(h.seen)))
				// sarama 1.22 commits on its ticker; its final flush on close is not reliable
				time.Sleep(time.Second)
			case <-time.After(45 * time.Second):
				report("group.consume", fmt.Errorf("only %d of %d", len(h.seen), *count), "")
			}
			cancel()
			cg.Close()
		}
		admin, err := sarama.NewClusterAdmin(brokers, cfg)
		if err == nil {
			groups, err := admin.ListConsumerGroups()
			if err == nil {
				if _, ok := groups[group]; !ok {
					err = fmt.Errorf("group missing from %v", groups)
				}
			}
			report("admin.list_groups", err, "")
			descs, err := admin.DescribeConsumerGroups([]string{group})
			detail := ""
			if err == nil && len(descs) == 1 {
				detail = "state=" + descs[0].State
			}
			report("admin.describe_groups", err, detail)
			offs, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{*topic: parts})
			total := int64(0)
			if err == nil {
				var keys []string
				for p, b := range offs.Blocks[*topic] {
					if b.Err != sarama.ErrNoError {
						err = b.Err
					}
					if b.Offset > 0 { // -1: a partition no key hashed to, never committed
						total += b.Offset
					}
					keys = append(keys, fmt.Sprint(p))
				}
				sort.Strings(keys)
				if err == nil && total != int64(*count) {
					err = fmt.Errorf("committed %d, produced %d", total, *count)
				}
			}
			report("admin.group_offsets", err, fmt.Sprintf("committed total %d", total))
			if cfg.Version.IsAtLeast(sarama.V0_11_0_0) {
				err = admin.DeleteRecords(*topic, map[int32]int64{0: 1})
				report("admin.delete_records", err, "")
			}
			err = admin.DeleteTopic(*topic)
			report("admin.delete_topic", err, "")
			admin.Close()
		}
	}
	client.Close()
}

func strPtr(s string) *string { return &s }

func expectErr(err error, want error) error {
	if err == nil {
		return fmt.Errorf("no error, wanted %v", want)
	}
	if te, ok := err.(*sarama.TopicError); ok && te.Err == want {
		return nil
	}
	if err == want {
		return nil
	}
	return fmt.Errorf("got %v, wanted %v", err, want)
}
