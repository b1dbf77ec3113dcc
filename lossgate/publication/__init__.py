"""Publishing a summary: the switch, a compare-and-swap on the subject's alias under
epoch fences (:mod:`.switch`), read-back verification (:mod:`.readback`), and which
registry upgrades make a summary unfit to publish (:mod:`.upgrades`)."""
