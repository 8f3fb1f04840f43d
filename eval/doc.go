// Package eval measures rankings: recall@k, MAP@k (trec_eval map_cut), nDCG@k
// and MRR@k per question, a paired bootstrap over questions that says whether
// a change won, lost or tied, and McNemar's exact test on per-question hits.
//
// It knows nothing about chunks: a ranking is a list of IDs, gold is a set of
// IDs. Entry points: [Score], [Bootstrap], [McNemar], [LoadObliQA].
//
// Randomness is seeded and passed in: the same inputs and seed give the same
// interval on every run.
package eval
