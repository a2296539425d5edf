// Module renaming with a shared action and different constants per copy.
dtmc
const double p1 = 0.3;
const double p2 = 0.6;
module player1
	a : [0..5] init 0;
	[hit] a<5 -> p1 : (a'=a+1) + 1-p1 : (a'=a);
	[end] a=5 -> true;
endmodule
module player2 = player1 [ a=b, p1=p2 ] endmodule
label "p1_wins" = a=5;
label "both_done" = a=5 & b=5;
