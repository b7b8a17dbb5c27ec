// Model builders (see lstm.h, gru.h).
