import unittest

from remote_finetune.events import make_event, validate_event
from remote_finetune.hfmetrics import TrainerOutputParser, parse_logged_dict


class PrintedDicts(unittest.TestCase):
    def test_the_forms_trainer_prints(self):
        self.assertEqual(parse_logged_dict("{'loss': 1.2345, 'grad_norm': 0.53, 'learning_rate': 0.0002, 'epoch': 0.04}"),
                         {"loss": 1.2345, "grad_norm": 0.53, "learning_rate": 0.0002, "epoch": 0.04})
        # newer transformers format floats as strings; numpy 2 and tensors wrap them
        self.assertEqual(parse_logged_dict("{'loss': '1.234', 'grad_norm': np.float64(0.5), 'learning_rate': tensor(2e-4, device='cuda:0'), 'epoch': '0.05'}"),
                         {"loss": 1.234, "grad_norm": 0.5, "learning_rate": 2e-4, "epoch": 0.05})
        # tqdm's carriage-return prefix and non-finite values
        self.assertEqual(parse_logged_dict("\r 10%|█ | 10/100 [00:10<01:30] {'loss': nan, 'epoch': 0.1}"), {"epoch": 0.1})
        self.assertIsNone(parse_logged_dict("config = {'a': [1, 2]}"))
        self.assertIsNone(parse_logged_dict("no dict here"))
        self.assertIsNone(parse_logged_dict("{'loss': __import__('os')}"))

    def test_events_from_a_run_are_valid_and_typed(self):
        p = TrainerOutputParser()
        lines = [
            "  0%|          | 0/200 [00:00<?, ?it/s]",
            "  5%|▌         | 10/200 [00:10<03:10,  1.00s/it]",
            "{'loss': 2.3131, 'grad_norm': 0.8123, 'learning_rate': 0.0002, 'epoch': 0.04, 'num_input_tokens_seen': 51200}",
            " 10%|█         | 20/200 [00:20<03:00,  1.00s/it]",
            "{'loss': 1.9876, 'grad_norm': 0.6512, 'learning_rate': 0.000198, 'epoch': 0.08}",
            "100%|██████████| 13/13 [00:03<00:00,  4.1it/s]",  # the eval bar must not move the step
            "{'eval_loss': 2.0112, 'eval_runtime': 3.21, 'eval_samples_per_second': 31.1, 'epoch': 0.08}",
            "{'train_runtime': 90.0, 'train_samples_per_second': 2.5, 'train_steps_per_second': 0.2, 'train_loss': 2.1, 'epoch': 3.0}",
            "Saving model checkpoint to outputs/checkpoint-20",
        ]
        got = [g for g in (p.feed(l) for l in lines) if g]
        self.assertEqual([t for t, _ in got], ["metrics", "metrics", "eval", "metrics"])
        self.assertEqual(got[0][1], {"step": 10, "max_steps": 200, "loss": 2.3131, "learning_rate": 0.0002, "grad_norm": 0.8123, "epoch": 0.04,
                                     "extra": {"num_input_tokens_seen": 51200.0}})
        self.assertEqual(got[1][1]["step"], 20)
        self.assertEqual(got[2][1], {"step": 20, "eval_loss": 2.0112, "epoch": 0.08, "metrics": {"eval_runtime": 3.21, "eval_samples_per_second": 31.1}})
        self.assertEqual(got[3][1]["extra"]["train_runtime"], 90.0)
        for t, f in got:
            self.assertIsNone(validate_event(make_event(t, **f)))

    def test_without_a_progress_bar_steps_count_logging_lines(self):
        p = TrainerOutputParser()
        a = p.feed("{'loss': 1.0, 'epoch': 0.1}")
        b = p.feed("{'loss': 0.9, 'epoch': 0.2}")
        self.assertEqual((a[1]["step"], b[1]["step"]), (1, 2))


if __name__ == "__main__":
    unittest.main()
