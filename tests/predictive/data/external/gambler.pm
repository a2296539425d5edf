// Gambler's ruin with a target fortune N and win probability p; formula, rewards, min/max.
dtmc
const int N = 20;
const double p = 0.45;
formula broke = x=0;
formula rich = x=N;

module gambler
	x : [0..N] init 10;
	[bet] !broke & !rich -> p : (x'=min(N, x+1)) + 1-p : (x'=max(0, x-1));
	[stop] broke | rich -> true;
endmodule

rewards "bets" [bet] true : 1; endrewards
label "broke" = broke;
label "rich" = rich;
