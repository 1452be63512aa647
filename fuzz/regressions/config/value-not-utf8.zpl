msgx.log.level = info
msgx.kafka.topic.msg = "msgxÿþ"
