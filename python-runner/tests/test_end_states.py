"""Honest end states on the host's side (issue 36.4): each way a run can end is one word in the `finished` event,
and the host notification says that word with its own ntfy tag and priority, so a preempted or stalled run does
not read as failed (a red x) or completed (a green tick) on a phone. The receiver is a loopback HTTP server
standing in for ntfy."""

import unittest

from remote_finetune import events, notify, run
from tests.helpers import TempDirTest
from tests.test_notify import Receiver


class EndWords(TempDirTest):
    def test_every_end_has_its_own_tag_and_a_stall_or_failure_is_urgent(self):
        self.assertEqual(set(notify.END_TAGS), set(events.FINISHED_STATUSES))
        self.assertEqual(len({tags for tags, _ in notify.END_TAGS.values()}), len(events.FINISHED_STATUSES))
        ntfy = Receiver()
        self.addCleanup(ntfy.close)
        env = {notify.NTFY: ntfy.url + "/topic"}
        for status in events.FINISHED_STATUSES:
            notify.send_finished(self.tmp, env, "ft", {"status": status, "exit_code": 0}, self.fail)
        got = {h["Title"].split()[1]: (h["Tags"], h["Priority"]) for _, h, _ in ntfy.posts}
        self.assertEqual(got, dict(notify.END_TAGS))
        self.assertEqual({s for s, (_, p) in got.items() if p == "high"}, {"failed", "stalled"})

    def test_the_runner_names_what_sent_the_signal(self):
        self.assertEqual(run._stopped_by(True, True, True), "stalled")
        self.assertEqual(run._stopped_by(False, True, True), "budget-stopped")
        self.assertEqual(run._stopped_by(False, False, True), "preempted")
        self.assertEqual(run._stopped_by(False, False, False), "interrupted")


if __name__ == "__main__":
    unittest.main()
