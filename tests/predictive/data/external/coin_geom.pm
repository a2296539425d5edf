// Flip a biased coin until two heads in a row; unbounded integer counter (Storm bounds it by reachability).
dtmc
const double p = 0.4;
const int MAXF = 12;

module coin
	h : [0..2] init 0;
	flips : int init 0;
	[] h<2 & flips<MAXF -> p : (h'=h+1) & (flips'=flips+1) + 1-p : (h'=0) & (flips'=flips+1);
	[] h=2 | flips=MAXF -> true;
endmodule

label "two_heads" = h=2;
rewards "flips" h<2 & flips<MAXF : 1; endrewards
