// Random walk on an N x N grid with absorbing border: top edge = goal, other edges = fail.
dtmc
const int N = 12;
global x : [0..N-1] init floor(N/2);
global y : [0..N-1] init floor(N/2);
formula border = x=0 | x=N-1 | y=0 | y=N-1;

module walker
	[] !border -> 0.25 : (x'=x+1) + 0.25 : (x'=x-1) + 0.25 : (y'=y+1) + 0.25 : (y'=y-1);
	[] border -> true;
endmodule

label "goal" = y=N-1 & x>0 & x<N-1;
label "fail" = border & !(y=N-1 & x>0 & x<N-1);
rewards "steps" !border : 1; endrewards
